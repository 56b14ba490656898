// Placeholder until the issue that builds `qwn migrate` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn migrate: not yet available');
  return Promise.resolve(1);
}
