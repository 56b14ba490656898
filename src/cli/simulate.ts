// Placeholder until the issue that builds `qwn simulate` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn simulate: not yet available');
  return Promise.resolve(1);
}
