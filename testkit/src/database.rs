//! Databases the tests own: a fresh PostgreSQL database per test on the
//! server `SECKILL_TEST_DATABASE_URL` names, and the MariaDB the
//! `mysql-get-lock` tests share.

/// URL of the MariaDB the `mysql-get-lock` tests take `GET_LOCK` on
/// (`SECKILL_TEST_MYSQL_URL`; `make test` starts the machine's when down).
pub fn mysql_test_url() -> String {
    std::env::var("SECKILL_TEST_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
}

/// URL of the PostgreSQL server the tests may create databases on.
pub fn admin_database_url() -> String {
    std::env::var("SECKILL_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn with_database(url: &str, name: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("url with a database path");
    format!("{base}/{name}")
}

/// Create an empty database; returns its URL.
pub async fn fresh_database() -> String {
    let admin = admin_database_url();
    // The pid lets `make test` drop only databases of finished runs.
    let name = format!(
        "seckill_test_{}_{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    );
    let pool = sqlx::PgPool::connect(&admin)
        .await
        .expect("PostgreSQL reachable at SECKILL_TEST_DATABASE_URL (run `make test`)");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .expect("create test database");
    pool.close().await;
    with_database(&admin, &name)
}
