-- pg-2pc's stock database (SECKILL_STOCK_DATABASE_URL): the stock side of
-- its two-phase commit. One row per product, loaded from the order
-- database's `products` when pg-2pc becomes the strategy and on every
-- reset. No CHECK (stock >= 0): the decrement's own WHERE keeps it.
CREATE TABLE IF NOT EXISTS stock (
    product_id BIGINT PRIMARY KEY,
    stock      BIGINT NOT NULL
);
