//! The command queue (FlexIO `flexio_cmdq`) on the device model: FlexIO's multithread sample
//! (5x5 product, one `matmul_cell` task per cell) over several workers, the PENDING state,
//! more tasks than the ring holds, refused entries, a faulting task and teardown.

use crate::dpa_common::bf3;

use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::Devx;
use mlx5_dpa::dpa::cmdq::{CmdQueue, CmdqAttr, CmdqState, WORKER_ENTRY};
use mlx5_dpa::dpa::{DpaBuf, DpaError, Process, ProcessAttr, ProcessStatus};

type R = Result<(), Box<dyn std::error::Error>>;

const MATMUL: &[u8] = include_bytes!("../../fw-blobs/bin/matmul.elf");
const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
const T: Duration = Duration::from_secs(10);
const N: usize = 5;
/// `struct matmul_task` (fw-blobs/src/matmul.h).
const TASK_BYTES: u64 = 48;

fn finish(d: mlx5_sim::Device, ctx: Arc<dyn Devx>) {
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
}

/// Random-looking u64s (splitmix64), large enough that products wrap.
fn values(seed: u64, n: usize) -> Vec<u64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        })
        .collect()
}

fn host_product(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut c = vec![0u64; N * N];
    for r in 0..N {
        for col in 0..N {
            c[r * N + col] = (0..N).fold(0u64, |s, k| {
                s.wrapping_add(a[r * N + k].wrapping_mul(b[k * N + col]))
            });
        }
    }
    c
}

fn to_bytes(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A, B, C and one task block per cell of C in DPA memory.
struct Matmul {
    a: Vec<u64>,
    b: Vec<u64>,
    c: DpaBuf,
    tasks: DpaBuf,
    _ab: (DpaBuf, DpaBuf),
}

impl Matmul {
    fn new(p: &Process, seed: u64) -> Result<Matmul, DpaError> {
        let a = values(seed, N * N);
        let b = values(seed ^ 0x5555, N * N);
        let (da, db, dc) = (p.alloc(8 * 25)?, p.alloc(8 * 25)?, p.alloc(8 * 25)?);
        p.copy_to_dev(da.daddr(), &to_bytes(&a))?;
        p.copy_to_dev(db.daddr(), &to_bytes(&b))?;
        p.memset(dc.daddr(), 0, 8 * N * N)?;
        let tasks = p.alloc(TASK_BYTES * (N * N) as u64)?;
        let mut blocks = Vec::new();
        for cell in 0..N * N {
            let mut t = [0u8; TASK_BYTES as usize];
            t[0..8].copy_from_slice(&da.daddr().to_le_bytes());
            t[8..16].copy_from_slice(&db.daddr().to_le_bytes());
            t[16..24].copy_from_slice(&dc.daddr().to_le_bytes());
            t[24..28].copy_from_slice(&(N as u32).to_le_bytes());
            t[28..32].copy_from_slice(&((cell / N) as u32).to_le_bytes());
            t[32..36].copy_from_slice(&((cell % N) as u32).to_le_bytes());
            blocks.extend_from_slice(&t);
        }
        p.copy_to_dev(tasks.daddr(), &blocks)?;
        Ok(Matmul {
            a,
            b,
            c: dc,
            tasks,
            _ab: (da, db),
        })
    }

    fn task(&self, cell: usize) -> u64 {
        self.tasks.daddr() + TASK_BYTES * cell as u64
    }

    fn read_c(&self, p: &Process) -> Result<Vec<u64>, DpaError> {
        let mut raw = vec![0u8; 8 * N * N];
        p.copy_from_dev(self.c.daddr(), &mut raw)?;
        Ok(raw
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
            .collect())
    }
}

#[test]
fn product_5x5_one_task_per_cell_over_four_workers() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, MATMUL, &ProcessAttr::default())?;
    let m = Matmul::new(&p, 1)?;
    let mut q = p.cmdq(&CmdqAttr {
        workers: 4,
        batch_size: 5,
        state: CmdqState::Running,
        log_depth: 5,
    })?;
    assert_eq!(d.inventory().count("DPA_THREAD"), 4);
    for cell in 0..N * N {
        q.task_add("matmul_cell", m.task(cell))?;
    }
    q.wait_empty(T)?;
    assert!(q.is_empty()?);
    let expect = host_product(&m.a, &m.b);
    // Inputs are large: the product wraps, and no cell is trivially zero.
    assert!(expect.iter().all(|&v| v != 0));
    assert_eq!(m.read_c(&p)?, expect);
    let c = q.counters()?;
    assert_eq!(
        (c.submitted, c.published, c.claimed, c.completed, c.errors),
        (25, 25, 25, 25, 0)
    );
    // How the 25 tasks spread over the workers depends on timing: a worker keeps claiming
    // while tasks remain, so under load one may take every batch before another is run.
    // What holds: every activation is counted once, by the device when it starts and by
    // firmware when it ends; once the workers are quiet the two agree (bounded wait: a worker
    // may still be on its way out when the last task retires).
    let start = std::time::Instant::now();
    loop {
        let device = q.counters()?.activations;
        let per_worker = q.worker_activations()?;
        if per_worker.iter().sum::<u64>() == device {
            assert!(device >= 1, "{per_worker:?}");
            break;
        }
        assert!(
            start.elapsed() < T,
            "device {device}, threads {per_worker:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(q);
    assert_eq!(d.inventory().count("DPA_THREAD"), 0);
    drop((m, p));
    finish(d, ctx);
    Ok(())
}

#[test]
fn pending_queue_runs_nothing_until_state_running() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, MATMUL, &ProcessAttr::default())?;
    let m = Matmul::new(&p, 2)?;
    let mut q = CmdQueue::create(&p, &CmdqAttr::new(2, 4, CmdqState::Pending))?;
    for cell in 0..10 {
        q.task_add("matmul_cell", m.task(cell))?;
    }
    assert!(matches!(q.wait_empty(T), Err(DpaError::BadArgs(_))));
    assert!(!q.is_empty()?);
    std::thread::sleep(Duration::from_millis(50));
    let c = q.counters()?;
    // Two full batches are in the ring, the third is staged; nothing published or run.
    assert_eq!((c.submitted, c.written, c.published), (10, 8, 0));
    assert_eq!((c.claimed, c.completed, c.activations), (0, 0, 0));
    assert_eq!(q.worker_activations()?, [0, 0]);
    assert!(m.read_c(&p)?.iter().all(|&v| v == 0));

    q.state_running()?;
    assert_eq!(q.state(), CmdqState::Running);
    q.wait_empty(T)?;
    // Ten tasks were published at once to two idle workers: both were run (whichever then
    // claimed the tasks). An activation is counted when it ends, and the tasks may all have
    // retired while the other worker's activation is still on its way out: wait (bounded).
    let start = std::time::Instant::now();
    loop {
        let per_worker = q.worker_activations()?;
        if per_worker.iter().all(|&n| n >= 1) {
            break;
        }
        assert!(
            start.elapsed() < T,
            "a worker was never run: {per_worker:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let expect = host_product(&m.a, &m.b);
    let got = m.read_c(&p)?;
    assert_eq!(got[..10], expect[..10]);
    assert!(got[10..].iter().all(|&v| v == 0));
    assert_eq!(q.counters()?.completed, 10);
    drop((q, m, p));
    finish(d, ctx);
    Ok(())
}

#[test]
fn more_tasks_than_the_ring_holds_go_in_waves() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, MATMUL, &ProcessAttr::default())?;
    let m = Matmul::new(&p, 3)?;
    // Four slots, batches of three: batches wrap the ring's end.
    let mut q = p.cmdq(&CmdqAttr {
        workers: 3,
        batch_size: 3,
        state: CmdqState::Pending,
        log_depth: 2,
    })?;
    assert_eq!(q.depth(), 4);
    for cell in 0..4 {
        q.task_add("matmul_cell", m.task(cell))?;
    }
    assert_eq!(q.free_slots(), 0);
    match q.task_add("matmul_cell", m.task(4)) {
        Err(DpaError::BadArgs(msg)) => assert!(msg.contains("full"), "{msg}"),
        other => panic!("expected a full queue, got {other:?}"),
    }
    q.state_running()?;
    // From here the ring refills as workers finish: how often it is found full depends on
    // timing, so only the result and the counters are checked.
    let mut cell = 4;
    while cell < N * N {
        match q.task_add("matmul_cell", m.task(cell)) {
            Ok(()) => cell += 1,
            Err(DpaError::BadArgs(msg)) if msg.contains("full") => q.wait_empty(T)?,
            Err(e) => return Err(e.into()),
        }
    }
    q.wait_empty(T)?;
    assert_eq!(m.read_c(&p)?, host_product(&m.a, &m.b));
    let c = q.counters()?;
    assert_eq!((c.completed, c.errors, c.claimed), (25, 0, 25));
    drop((q, m, p));
    finish(d, ctx);
    Ok(())
}

#[test]
fn bad_entries_are_refused_and_counted() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, MATMUL, &ProcessAttr::default())?;
    let m = Matmul::new(&p, 4)?;
    let cell_fn = p.symbol("matmul_cell")?;
    let mut q = p.cmdq(&CmdqAttr::new(2, 1, CmdqState::Running))?;
    assert!(matches!(
        q.task_add("no_such_function", 0),
        Err(DpaError::UnknownSymbol(_))
    ));
    q.task_add("matmul_cell", m.task(0))?;
    q.task_add_daddr(0, m.task(1))?; // null
    q.task_add_daddr(cell_fn + 1, m.task(2))?; // odd
    q.task_add_daddr(0x8000_0000, m.task(3))?; // data, not text
    q.task_add("matmul_cell", m.task(4))?;
    q.wait_empty(T)?;
    let c = q.counters()?;
    assert_eq!((c.submitted, c.completed, c.errors), (5, 2, 3));
    assert_eq!(c.last_bad_entry, 0x8000_0000);
    let got = m.read_c(&p)?;
    let expect = host_product(&m.a, &m.b);
    assert_eq!((got[0], got[4]), (expect[0], expect[4]));
    assert_eq!(got[1..4], [0, 0, 0]);
    assert_eq!(p.err_status()?.status, ProcessStatus::Ok);
    drop((q, m, p));
    finish(d, ctx);
    Ok(())
}

#[test]
fn faulting_task_gives_process_fault() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let out = p.alloc(8)?;
    let mut q = p.cmdq(&CmdqAttr::new(2, 1, CmdqState::Running))?;
    q.task_add("st_store", out.daddr())?;
    q.wait_empty(T)?;
    q.task_add("st_fault_load", 0x10)?;
    match q.wait_empty(T) {
        Err(DpaError::ProcessFault { status, syndrome }) => {
            assert_eq!(status, ProcessStatus::Fault);
            assert_ne!(syndrome, 0);
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    assert_eq!(p.coredump()?.fault_addr, 0x10);
    let c = q.counters()?;
    assert_eq!((c.submitted, c.completed, c.claimed), (2, 1, 2));
    assert!(matches!(q.is_empty(), Err(DpaError::ProcessFault { .. })));
    drop((q, out, p));
    finish(d, ctx);
    Ok(())
}

#[test]
fn queue_keeps_the_process_and_teardown_leaves_no_threads() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, MATMUL, &ProcessAttr::default())?;
    assert!(p.symbol(WORKER_ENTRY).is_ok());
    for bad in [
        CmdqAttr::new(0, 1, CmdqState::Running),
        CmdqAttr::new(1, 0, CmdqState::Running),
        CmdqAttr {
            log_depth: 2,
            ..CmdqAttr::new(1, 5, CmdqState::Running)
        },
        CmdqAttr {
            log_depth: 17,
            ..CmdqAttr::default()
        },
        CmdqAttr::new(100_000, 1, CmdqState::Running),
    ] {
        assert!(matches!(p.cmdq(&bad), Err(DpaError::BadArgs(_))), "{bad:?}");
    }
    assert_eq!(d.inventory().count("DPA_THREAD"), 0);
    let m = Matmul::new(&p, 5)?;
    let mut q = p.cmdq(&CmdqAttr::new(8, 25, CmdqState::Running))?;
    assert_eq!(d.inventory().count("DPA_THREAD"), 8);
    // The queue holds the process: dropping the caller's handle changes nothing.
    drop(p);
    for cell in 0..N * N {
        q.task_add("matmul_cell", m.task(cell))?;
    }
    // One batch of 25: nothing published until the 25th task.
    q.wait_empty(T)?;
    assert_eq!(q.counters()?.completed, 25);
    // Tasks left queued at drop time do not stop teardown.
    for cell in 0..N * N {
        q.task_add("matmul_cell", m.task(cell))?;
    }
    q.flush()?;
    drop(q);
    assert_eq!(d.inventory().count("DPA_THREAD"), 0);
    assert_eq!(d.inventory().count("DPA_PROCESS"), 1);
    drop(m);
    finish(d, ctx);
    Ok(())
}

#[test]
fn many_workers_claim_each_task_once() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, MATMUL, &ProcessAttr::default())?;
    let m = Matmul::new(&p, 6)?;
    // Batches of one: every add publishes and runs idle workers while others still claim.
    let mut q = p.cmdq(&CmdqAttr {
        workers: 8,
        batch_size: 1,
        state: CmdqState::Running,
        log_depth: 5,
    })?;
    for round in 1..=8u64 {
        for cell in 0..N * N {
            q.task_add("matmul_cell", m.task(cell))?;
        }
        q.wait_empty(T)?;
        let c = q.counters()?;
        // A task claimed twice would show as completed > claimed.
        assert_eq!(
            (c.submitted, c.claimed, c.completed, c.errors),
            (25 * round, 25 * round, 25 * round, 0)
        );
    }
    assert_eq!(m.read_c(&p)?, host_product(&m.a, &m.b));
    drop((q, m, p));
    finish(d, ctx);
    Ok(())
}
