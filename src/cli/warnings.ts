// Placeholder until the issue that builds `qwn warnings` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn warnings: not yet available');
  return Promise.resolve(1);
}
