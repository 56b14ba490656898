// Placeholder until the issue that builds `qwn demo` lands.
export function run(_argv: string[]): Promise<number> {
  console.error('qwn demo: not yet available');
  return Promise.resolve(1);
}
