-- The pg-atomic grab as one transaction, straight to PostgreSQL: the same
-- statements app/src/lock/pg_atomic.rs sends (conditional decrement,
-- repeat-buyer check, insert), with a fresh buyer each time.
\set uid random(1, 1000000000000)
BEGIN;
UPDATE products SET stock = stock - 1, updated_at = now() WHERE id = 1 AND stock >= 1 RETURNING stock;
SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = 1 AND user_id = :uid);
INSERT INTO orders (product_id, user_id, quantity, strategy, fence_token) VALUES (1, :uid, 1, 'pgbench', NULL) RETURNING id;
COMMIT;
