// Placeholder until the issue that builds `qwn top` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn top: not yet available');
  return Promise.resolve(1);
}
