-- antirez's check-and-set (the `check_token` switch): each holder writes
-- 64 bits of its lock's random value here before it reads, and
-- its write commits only while the row still holds them.
ALTER TABLE products ADD COLUMN lock_value BIGINT NULL;
