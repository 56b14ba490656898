/** The server the integration tests use (.ci/run makes sure it answers). */
export const ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/test';
