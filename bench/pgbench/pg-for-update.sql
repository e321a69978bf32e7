-- The pg-for-update grab as one transaction, straight to PostgreSQL: the
-- statements app/src/section.rs sends under RowLock::ForUpdate (locked read,
-- repeat-buyer check, blind write of the value read minus one, insert).
\set uid random(1, 1000000000000)
BEGIN;
SELECT stock, version FROM products WHERE id = 1 FOR UPDATE \gset
SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = 1 AND user_id = :uid);
UPDATE products SET stock = :stock - 1, updated_at = now() WHERE id = 1;
INSERT INTO orders (product_id, user_id, quantity, strategy, fence_token) VALUES (1, :uid, 1, 'pgbench', NULL) RETURNING id;
COMMIT;
