//! The launcher against real processes (`sh`, `sleep`): a child of the
//! child dies with the group, stop escalates from `SIGTERM` to `SIGKILL`,
//! a freeze shows as state `T` in `/proc`, a start that exits quotes its
//! log, and a start that exits is tried again on new ports.

use std::cell::Cell;
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use seckill_launch::{
    free_port, local, parse_signal, send_signal, start_on_free_ports, Launch, LaunchError, Ready,
    Service, Signal, PORT_RACE_ATTEMPTS,
};
use seckill_testkit::eventually_blocking;

/// How long a process gets to reach a state a test waits for.
const WITHIN: Duration = Duration::from_secs(5);

/// A fresh folder for one test's logs.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("seckill-launch-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// `sh -c script`, its output in `log`.
fn shell(script: &str, log: &Path) -> Launch {
    Launch::new("test shell", "sh")
        .args(["-c", script])
        .log(log)
}

/// The process state letter from `/proc/<pid>/stat` (`S`, `R`, `T`, `Z`),
/// or None once the process is gone.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

/// Gone or a zombie: nothing of it runs any more (whoever inherited an
/// orphan reaps it in its own time).
fn dead(pid: u32) -> bool {
    matches!(state(pid), None | Some('Z'))
}

/// Wait (testkit's poll, up to [`WITHIN`]) until `pid` is dead.
fn until_dead(what: &str, pid: u32) {
    eventually_blocking(what, WITHIN, || {
        if dead(pid) {
            Ok(())
        } else {
            Err(state(pid))
        }
    });
}

/// Wait until `pid` is stopped (state `T`), or, with `stopped` false,
/// until it is not.
fn until_stopped(what: &str, pid: u32, stopped: bool) {
    eventually_blocking(what, WITHIN, || {
        let seen = state(pid);
        if (seen == Some('T')) == stopped {
            Ok(())
        } else {
            Err(seen)
        }
    });
}

/// The pid a script printed as its first log line (`echo $!` / `echo $$`).
fn printed_pid(log: &Path) -> u32 {
    eventually_blocking("the script printed a pid", WITHIN, || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let pid = text
            .lines()
            .next()
            .and_then(|line| line.trim().parse().ok());
        pid.ok_or(text)
    })
}

#[test]
fn a_child_of_the_child_dies_with_the_group_on_drop() {
    let dir = scratch("drop");
    let log = dir.join("sh.log");
    let running = shell("sleep 100 & echo $!; wait", &log)
        .spawn()
        .expect("spawn");
    let grandchild = printed_pid(&log);
    assert!(!dead(grandchild), "the background sleep runs");
    let leader = running.pid();
    drop(running);
    assert!(dead(leader), "the leader is reaped by the drop");
    // Killing only the direct child (Child::kill) would leave the sleep.
    until_dead("the shell's background sleep is killed", grandchild);
}

#[test]
fn stop_escalates_to_sigkill_for_a_group_that_ignores_sigterm() {
    let dir = scratch("stop-kill");
    let log = dir.join("sh.log");
    // The ignored SIGTERM is inherited by the background sleep too.
    let running = shell(
        "trap '' TERM; sleep 100 & echo $!; while :; do sleep 0.05; done",
        &log,
    )
    .stop_grace(Duration::from_millis(300))
    .spawn()
    .expect("spawn");
    let grandchild = printed_pid(&log);
    let asked = Instant::now();
    let status = running.stop();
    assert!(
        asked.elapsed() >= Duration::from_millis(300),
        "stop waited its grace before SIGKILL"
    );
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32), "{status}");
    until_dead("the background sleep is killed", grandchild);
}

#[test]
fn stop_lets_a_process_that_handles_sigterm_end_on_its_own() {
    let dir = scratch("stop-term");
    let log = dir.join("sh.log");
    let running = shell(
        "trap 'echo got TERM; exit 0' TERM; echo $$; while :; do sleep 0.05; done",
        &log,
    )
    .spawn()
    .expect("spawn");
    printed_pid(&log);
    let asked = Instant::now();
    let status = running.stop();
    assert!(status.success(), "ended by its own trap: {status}");
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "well before the grace"
    );
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(text.contains("got TERM"), "log: {text}");
}

#[test]
fn freeze_and_thaw_reach_every_process_of_the_group() {
    let dir = scratch("freeze");
    let log = dir.join("sh.log");
    let mut running = shell("sleep 100 & echo $!; wait", &log)
        .spawn()
        .expect("spawn");
    let grandchild = printed_pid(&log);
    let leader = running.pid();
    running.freeze().expect("freeze");
    assert!(running.is_frozen());
    until_stopped("the leader is stopped (T)", leader, true);
    until_stopped("the background sleep is stopped (T)", grandchild, true);
    running.thaw().expect("thaw");
    assert!(!running.is_frozen());
    until_stopped("the leader runs again", leader, false);
    until_stopped("the background sleep runs again", grandchild, false);
    // A frozen group still dies on drop.
    running.freeze().expect("freeze again");
    drop(running);
    until_dead("the frozen background sleep is killed", grandchild);
}

#[test]
fn a_start_that_exits_at_once_quotes_its_log() {
    let dir = scratch("exits");
    let log = dir.join("sh.log");
    let port = free_port().expect("port");
    let mut service = Service::new(
        shell(
            "echo starting; echo 'bind: Address already in use' >&2; exit 3",
            &log,
        ),
        Ready::port(local(port)),
    );
    let error = service.start().expect_err("it exits");
    assert!(error.exited_at_start(), "{error:?}");
    let message = error.to_string();
    for expected in [
        "test shell (sh) exited at start",
        "exit status: 3",
        "last lines of",
        "starting",
        "bind: Address already in use",
    ] {
        assert!(message.contains(expected), "{expected:?} in: {message}");
    }
    assert!(!service.is_running());
}

#[test]
fn a_start_that_never_gets_ready_says_so_and_leaves_nothing_running() {
    let dir = scratch("not-ready");
    let log = dir.join("sh.log");
    let port = free_port().expect("port");
    let mut service = Service::new(
        shell("echo $$; echo waiting for nothing; exec sleep 100", &log),
        Ready::port(local(port)).within(Duration::from_millis(300)),
    );
    let error = service.start().expect_err("nothing listens");
    let message = error.to_string();
    assert!(
        matches!(error, LaunchError::NotReady { .. }),
        "not ready: {message}"
    );
    assert!(message.contains("not ready within 300ms"), "{message}");
    assert!(message.contains("waiting for nothing"), "{message}");
    let pid = printed_pid(&log);
    assert!(dead(pid), "the sleep that never got ready is killed");
}

/// How long after the start the port of the readiness tests listens.
const LISTENS_AFTER: Duration = Duration::from_millis(200);

#[test]
fn ready_port_waits_for_a_listener() {
    let port = free_port().expect("port");
    let started = Instant::now();
    // The listener, kept until the thread is joined.
    let listener = std::thread::spawn(move || {
        // A fixed wait is the point: the port listens only some time after
        // the start, and the start must wait that long.
        std::thread::sleep(LISTENS_AFTER);
        TcpListener::bind(local(port)).expect("bind")
    });
    let mut service = Service::new(
        Launch::new("sleeper", "sleep").arg("100"),
        Ready::port(local(port)),
    );
    service.start().expect("ready once the port listens");
    assert!(started.elapsed() >= LISTENS_AFTER);
    let pid = service.pid().expect("running");
    assert_eq!(service.kill().map(|s| s.signal()), Some(Some(9)));
    assert!(dead(pid));
    drop(listener.join().expect("listener thread"));
}

#[test]
fn a_start_that_exits_is_tried_again_on_new_ports() {
    let attempts = Cell::new(0);
    let error = start_on_free_ports(|[_port]| {
        attempts.set(attempts.get() + 1);
        Ok(Service::new(
            Launch::new("quitter", "sh").args(["-c", "exit 1"]),
            Ready::when("never", || false),
        ))
    })
    .expect_err("exits every time");
    assert!(error.exited_at_start(), "{error}");
    assert_eq!(attempts.get(), PORT_RACE_ATTEMPTS);

    let mut seen = Vec::new();
    let ([port], service) = start_on_free_ports(|[port]| {
        seen.push(port);
        // The first start exits before it is ready; the second runs.
        let (script, ready) = if seen.len() == 1 {
            ("exit 1", Ready::when("never", || false))
        } else {
            ("exec sleep 100", Ready::when("at once", || true))
        };
        Ok(Service::new(
            Launch::new("second time lucky", "sh").args(["-c", script]),
            ready,
        ))
    })
    .expect("the second start runs");
    assert_eq!(seen.len(), 2);
    assert_eq!(port, seen[1]);
    assert!(service.is_running());
}

#[test]
fn a_start_that_hangs_is_not_tried_again() {
    let attempts = Cell::new(0);
    let error = start_on_free_ports(|[_port]| {
        attempts.set(attempts.get() + 1);
        Ok(Service::new(
            Launch::new("hanger", "sleep").arg("100"),
            Ready::when("never", || false).within(Duration::from_millis(100)),
        ))
    })
    .expect_err("never ready");
    assert!(matches!(error, LaunchError::NotReady { .. }), "{error}");
    assert_eq!(attempts.get(), 1);
}

#[test]
fn a_missing_program_is_named_with_its_hint() {
    let error = Launch::new("ghost", "/nonexistent/seckill-ghost")
        .hint("install the ghost package")
        .spawn()
        .expect_err("no such program");
    let message = error.to_string();
    assert!(
        message.contains("cannot start ghost (/nonexistent/seckill-ghost)"),
        "{message}"
    );
    assert!(message.contains("install the ghost package"), "{message}");
}

#[test]
fn signals_by_kill_names_reach_a_single_pid() {
    for (name, signal) in [
        ("-STOP", Signal::SIGSTOP),
        ("CONT", Signal::SIGCONT),
        ("SIGKILL", Signal::SIGKILL),
        ("-9", Signal::SIGKILL),
        ("term", Signal::SIGTERM),
    ] {
        assert_eq!(parse_signal(name).expect(name), signal, "{name}");
    }
    assert!(parse_signal("-NOPE").is_err());
    let running = Launch::new("sleeper", "sleep")
        .arg("100")
        .spawn()
        .expect("spawn");
    send_signal(running.pid(), "-STOP").expect("stop");
    until_stopped("stopped by pid", running.pid(), true);
    send_signal(running.pid(), "-CONT").expect("cont");
    until_stopped("running by pid", running.pid(), false);
}

#[test]
fn a_second_start_of_a_running_service_is_refused() {
    let mut service = Service::new(
        Launch::new("sleeper", "sleep").arg("100"),
        Ready::when("at once", || true),
    );
    service.start().expect("start");
    let error = service.start().expect_err("already running");
    assert!(
        matches!(error, LaunchError::AlreadyRunning { .. }),
        "{error}"
    );
    service.kill();
    assert!(!service.is_running());
    assert!(matches!(
        service.freeze(),
        Err(LaunchError::NotRunning { .. })
    ));
    service.start().expect("start again after a kill");
}

#[cfg(feature = "tokio")]
#[tokio::test(flavor = "current_thread")]
async fn the_async_wait_keeps_the_runtime_free() {
    use seckill_launch::start_on_free_ports_async;
    let port = free_port().expect("port");
    // The listener comes from a task on the same single-threaded runtime:
    // a wait that blocked the thread would never see it. (The task answers
    // the listener, kept until it is awaited.)
    let listen = tokio::spawn(async move {
        // A fixed wait is the point: each readiness try runs on tokio's
        // blocking pool, so a listener bound at the task's first poll could
        // be there before the first try even with a blocking wait.
        tokio::time::sleep(LISTENS_AFTER).await;
        TcpListener::bind(local(port)).expect("bind")
    });
    let ([_], service) = start_on_free_ports_async(|[_]| {
        Ok(Service::new(
            Launch::new("sleeper", "sleep").arg("100"),
            Ready::port(local(port)).within(Duration::from_secs(5)),
        ))
    })
    .await
    .expect("ready");
    assert!(service.is_running());
    drop(listen.await.expect("listener task"));
}

/// Set for the copy of this test binary that plays the interrupted parent.
const INTERRUPT_HELPER: &str = "SECKILL_LAUNCH_INTERRUPT_HELPER_LOG";

#[test]
fn an_interrupted_parent_kills_the_groups_it_started() {
    let dir = scratch("interrupt");
    let log = dir.join("grandchild.log");
    let me = std::env::current_exe().expect("test binary");
    // The helper below, in a copy of this binary: it starts a group, then
    // waits to be interrupted.
    let parent = Launch::new("interrupted parent", me)
        .args(["--exact", "interrupt_helper", "--ignored", "--nocapture"])
        .env(INTERRUPT_HELPER, &log)
        .spawn()
        .expect("spawn the helper");
    let grandchild = printed_pid(&log);
    assert!(!dead(grandchild), "the helper's group runs");
    // SIGINT to the parent alone, as if only it got the Ctrl-C.
    send_signal(parent.pid(), "INT").expect("interrupt");
    eventually_blocking("the interrupted parent ends", WITHIN, || {
        if parent.has_exited() {
            Ok(())
        } else {
            Err("still running")
        }
    });
    let status = parent.kill();
    assert_eq!(status.signal(), Some(Signal::SIGINT as i32), "{status}");
    until_dead("its group's sleep is killed", grandchild);
}

#[test]
#[ignore = "run by an_interrupted_parent_kills_the_groups_it_started"]
fn interrupt_helper() {
    let Some(log) = std::env::var_os(INTERRUPT_HELPER) else {
        return;
    };
    seckill_launch::kill_groups_on_interrupt().expect("install");
    let _group = shell("sleep 100 & echo $!; wait", Path::new(&log))
        .spawn()
        .expect("spawn");
    // The interrupt ends this process. Should it never come, the helper
    // gives up (and drops its group) once the test that started it is
    // gone, or fails after a minute.
    let parent = std::os::unix::process::parent_id();
    eventually_blocking("the interrupt", Duration::from_secs(60), || {
        if std::os::unix::process::parent_id() == parent {
            Err("not interrupted")
        } else {
            Ok(())
        }
    });
}
