// Placeholder until the issue that builds `qwn poi` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn poi: not yet available');
  return Promise.resolve(1);
}
