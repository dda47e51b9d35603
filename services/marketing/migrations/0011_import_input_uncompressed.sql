-- An import's input is kept only until its worker has read it (it is cleared when the import
-- finishes), so compressing it buys little disk and costs much time: pglz took about 35 ms to
-- store a 430 KiB CSV and 12 ms to read it back, against about 7 ms each uncompressed. EXTERNAL
-- keeps a large value out of line (TOAST) without compressing it; it applies to values written
-- from now on.
ALTER TABLE performance_imports ALTER COLUMN input_csv SET STORAGE EXTERNAL;
ALTER TABLE performance_imports ALTER COLUMN input_rows SET STORAGE EXTERNAL;
