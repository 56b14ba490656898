import { run } from './cli.js';
import { processIo } from './cli/io.js';

/** The `qwn` process (bin/qwn.js): the command line, the process's streams and environment. */
process.exitCode = await run(process.argv.slice(2), processIo());
