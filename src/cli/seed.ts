// Placeholder until the issue that builds `qwn seed` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn seed: not yet available');
  return Promise.resolve(1);
}
