-- Products and orders, exactly as DESIGN.md names them.
-- No CHECK (stock >= 0) and no UNIQUE (product_id, user_id): a broken lock
-- must be able to leave negative stock and duplicate orders behind, where
-- the audit can see them.
CREATE TABLE products (
    id            BIGINT PRIMARY KEY,
    name          TEXT        NOT NULL,
    stock         BIGINT      NOT NULL,
    initial_stock BIGINT      NOT NULL,
    version       BIGINT      NOT NULL DEFAULT 0,
    fence_token   BIGINT      NOT NULL DEFAULT 0,
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE orders (
    id          BIGSERIAL PRIMARY KEY,
    product_id  BIGINT      NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    user_id     BIGINT      NOT NULL,
    quantity    INT         NOT NULL CHECK (quantity > 0),
    strategy    TEXT        NOT NULL,
    fence_token BIGINT      NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The one-order-per-user check inside the critical section looks up here.
CREATE INDEX orders_product_user_idx ON orders (product_id, user_id);
