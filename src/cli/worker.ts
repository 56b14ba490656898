// Placeholder until the issue that builds `qwn worker` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn worker: not yet available');
  return Promise.resolve(1);
}
