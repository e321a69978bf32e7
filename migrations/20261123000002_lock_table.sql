-- pg-lock-table (seed 003 scheme 1): a lock is a row; the primary key on
-- `name` is the unique index that lets exactly one INSERT win.
CREATE TABLE distributed_locks (
    name        TEXT PRIMARY KEY,
    owner       TEXT        NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
