// Placeholder until the issue that builds `qwn deliveries` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn deliveries: not yet available');
  return Promise.resolve(1);
}
