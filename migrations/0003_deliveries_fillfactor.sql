-- Room on each page for a row's next version: the claim of an attempt (attempts, claimed_until)
-- then changes no indexed column and stays on its page as a HOT update, without an entry in
-- each of the table's five indexes. See BENCHMARKS.md.
ALTER TABLE "deliveries" SET (fillfactor = 50);
