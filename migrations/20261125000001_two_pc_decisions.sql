-- pg-2pc's coordinator log (seed 001, two-phase commit).
--
-- The service coordinates a two-phase commit over two databases: the stock
-- side (SECKILL_STOCK_DATABASE_URL) and the order side (this database). Once
-- both sides are prepared (PREPARE TRANSACTION), the coordinator writes its
-- decision here — one autocommit INSERT, durable before the second phase
-- begins — and only then runs COMMIT PREPARED on each side. A coordinator
-- that restarts finds its in-doubt transactions in pg_prepared_xacts and
-- settles each from this table: a row means commit, no row means the
-- decision was never taken (presumed abort: roll back).
--
-- `gid` is the transaction's base name, `seckill2pc:<instance>:<uuid>`; the
-- sides are prepared as `<gid>:stock` and `<gid>:order`.
CREATE TABLE two_pc_decisions (
    gid         TEXT        PRIMARY KEY,
    coordinator TEXT        NOT NULL,
    decided_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
