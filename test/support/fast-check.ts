import fc from 'fast-check';

// FC_NUM_RUNS sets how many cases each property tries where the test does not say: fewer for a
// quick local loop, more for a soak (fast-check's default is 100).
const runs = Number(process.env.FC_NUM_RUNS);
if (Number.isInteger(runs) && runs > 0) fc.configureGlobal({ numRuns: runs });
