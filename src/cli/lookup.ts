// Placeholder until the issue that builds `qwn lookup` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn lookup: not yet available');
  return Promise.resolve(1);
}
