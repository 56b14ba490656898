import { defineConfig } from 'drizzle-kit';

// Only `drizzle-kit generate` is used: migrations are reviewed SQL, applied by `qwn migrate`.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './migrations',
});
