//! The registry: every strategy of this build, by name and in teaching
//! order. The one module that names each strategy file of [`crate::lock`];
//! [`crate::control`], [`crate::startup`] and [`crate::routes`] find the
//! strategies here.

use std::sync::Arc;

use crate::configuration::Settings;
use crate::lock::{
    etcd_lease, fenced, local_mutex, mysql_get_lock, none, pg_2pc, pg_3pc, pg_advisory, pg_atomic,
    pg_for_update, pg_lock_table, pg_optimistic, redis_lua_stock, redlock, set_nx_px,
    set_nx_px_check_del, set_nx_px_token, setnx, setnx_expire, setnx_expire_lua, setnx_getset,
    watchdog, zk_ephemeral_seq,
};
use crate::locking::Locked;
use crate::strategy::{Strategy, StrategyInfo};
use seckill_wire::strategies::StrategyName;

/// Every strategy's [`StrategyInfo`], in teaching order.
const INFOS: &[&StrategyInfo] = &[
    &none::INFO,
    &local_mutex::INFO,
    &setnx::INFO,
    &setnx_expire::INFO,
    &setnx_expire_lua::INFO,
    &setnx_getset::INFO,
    &set_nx_px::INFO,
    &set_nx_px_check_del::INFO,
    &set_nx_px_token::INFO,
    &watchdog::INFO,
    &redlock::INFO,
    &fenced::INFO,
    &mysql_get_lock::INFO,
    &etcd_lease::INFO,
    &zk_ephemeral_seq::INFO,
    &pg_lock_table::INFO,
    &pg_for_update::INFO,
    &pg_optimistic::INFO,
    &pg_advisory::INFO,
    &pg_atomic::INFO,
    &redis_lua_stock::INFO,
    &pg_2pc::INFO,
    &pg_3pc::INFO,
];

// The registry lists every wire name's strategy, in the wire's order (the
// names settings, the API and the metric labels use).
const _: () = assert!(
    in_wire_order(INFOS),
    "registry::INFOS must list one strategy per StrategyName, in StrategyName::ALL's order"
);

/// Whether `infos` are [`StrategyName::ALL`]'s strategies, in order.
const fn in_wire_order(infos: &[&StrategyInfo]) -> bool {
    if infos.len() != StrategyName::ALL.len() {
        return false;
    }
    let mut i = 0;
    while i < infos.len() {
        if infos[i].name as u8 != StrategyName::ALL[i] as u8 {
            return false;
        }
        i += 1;
    }
    true
}

/// Every strategy of this build, looked up by name or index.
#[derive(Debug, Clone)]
pub struct Strategies {
    all: Vec<Arc<dyn Strategy>>,
    two_pc: Arc<pg_2pc::Pg2pc>,
}

impl Strategies {
    /// Build every strategy once (Lua scripts are compiled here, Redlock
    /// nodes and the watchdog's pub/sub listener are set up); each lock
    /// taken around the section runs as a strategy through
    /// [`Locked`]. Must run inside the tokio runtime.
    pub fn new(settings: &Settings) -> anyhow::Result<Self> {
        let two_pc = Arc::new(pg_2pc::Pg2pc::new(settings)?);
        let all: Vec<Arc<dyn Strategy>> = vec![
            Arc::new(none::NoLock),
            Arc::new(Locked(local_mutex::LocalMutex::default())),
            Arc::new(Locked(setnx::Setnx)),
            Arc::new(Locked(setnx_expire::SetnxExpire)),
            Arc::new(Locked(setnx_expire_lua::SetnxExpireLua::new())),
            Arc::new(Locked(setnx_getset::SetnxGetset::new(
                settings.clock_skew_ms,
            ))),
            Arc::new(Locked(set_nx_px::SetNxPx)),
            Arc::new(Locked(set_nx_px_check_del::SetNxPxCheckDel)),
            Arc::new(Locked(set_nx_px_token::SetNxPxToken::new())),
            Arc::new(Locked(watchdog::Watchdog::new(&settings.redis_url)?)),
            Arc::new(Locked(redlock::Redlock::new(
                &settings.redlock_urls,
                settings.redlock_node_timeout_ms.ms(),
                settings.redlock_drift_factor,
            )?)),
            Arc::new(Locked(fenced::Fenced::new())),
            Arc::new(Locked(mysql_get_lock::MysqlGetLock::new(
                settings.mysql_url(),
                settings.database_max_connections.get(),
            )?)),
            Arc::new(Locked(etcd_lease::EtcdLease::new(&settings.etcd_urls()))),
            Arc::new(Locked(zk_ephemeral_seq::ZkEphemeralSeq::new(
                settings.zookeeper_url(),
            ))),
            Arc::new(Locked(pg_lock_table::PgLockTable)),
            Arc::new(pg_for_update::PgForUpdate),
            Arc::new(pg_optimistic::PgOptimistic),
            Arc::new(pg_advisory::PgAdvisory),
            Arc::new(pg_atomic::PgAtomic),
            Arc::new(redis_lua_stock::RedisLuaStock::new(
                settings.order_batch_max,
                settings.order_batch_commits,
                settings.order_batch_queue,
            )),
            two_pc.clone(),
            Arc::new(pg_3pc::Pg3pc::new(settings, two_pc.clone())?),
        ];
        debug_assert_eq!(
            all.iter().map(|s| s.info().name).collect::<Vec<_>>(),
            StrategyName::ALL
        );
        Ok(Self { all, two_pc })
    }

    /// `pg-2pc`'s coordinator (its recovery on start, its stock side).
    pub fn two_pc(&self) -> &Arc<pg_2pc::Pg2pc> {
        &self.two_pc
    }

    /// Index of a strategy by name.
    pub fn index_of(&self, name: StrategyName) -> Option<usize> {
        self.all.iter().position(|s| s.info().name == name)
    }

    /// Strategy at an index (from [`Strategies::index_of`]).
    pub fn get(&self, index: usize) -> &Arc<dyn Strategy> {
        &self.all[index.min(self.all.len() - 1)]
    }

    /// All strategies, in teaching order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Strategy>> {
        self.all.iter()
    }
}
