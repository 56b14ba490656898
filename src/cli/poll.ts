// Placeholder until the issue that builds `qwn poll` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn poll: not yet available');
  return Promise.resolve(1);
}
