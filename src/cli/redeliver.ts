// Placeholder until the issue that builds `qwn redeliver` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn redeliver: not yet available');
  return Promise.resolve(1);
}
