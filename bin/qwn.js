#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx, so `npx qwn` works right after `npm ci`
// with no build step (INTERFACE §1).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
