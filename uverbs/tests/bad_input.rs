//! Malformed calls to the served device get the kernel's errno, never a panic, and leave
//! nothing behind: headers and attributes the kernel refuses, unknown objects, methods,
//! attributes and commands, pointers into unmapped memory, absurd sizes; then the same entry
//! the fuzz target drives (`mlx5_sim_uverbs::fuzzing::fuzz_uverbs`) on random and mutated
//! programs of calls. Each case ends by closing the context and checking the model holds
//! nothing.

use std::sync::Mutex;

use mlx5_dpa::devx::kernel::abi::ids::{core_ids as c, mlx5_ids};
use mlx5_dpa::devx::kernel::abi::write::{self as w, cmd, WriteFrame};
use mlx5_dpa::devx::kernel::abi::{Attr, IoctlBuf, RDMA_VERBS_IOCTL, UVERBS_ATTR_F_MANDATORY};
use mlx5_sim_uverbs::fuzzing::{alloc_pd, fuzz_uverbs, seed_program, Outcome, Sandbox};
use nix::errno::Errno;
use proptest::prelude::*;
use zerocopy::FromBytes;

/// One sandbox at a time: the server and its confinement are the process's.
static ONE: Mutex<()> = Mutex::new(());

fn with_sandbox(f: impl FnOnce(&mut Sandbox)) {
    let _g = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut sb = Sandbox::open().expect("a context on the served device");
    f(&mut sb);
    let left = sb.close();
    assert!(left.is_empty(), "left on the model after close: {left}");
}

/// QUERY_PORT of port 1, its answer to `resp`.
fn query_port(resp: u64, len: u16) -> Vec<u8> {
    IoctlBuf::build(
        c::UVERBS_OBJECT_DEVICE,
        c::UVERBS_METHOD_QUERY_PORT,
        &[
            Attr::U32 {
                id: c::UVERBS_ATTR_QUERY_PORT_PORT_NUM,
                value: 1,
            },
            Attr::Out {
                id: c::UVERBS_ATTR_QUERY_PORT_RESP,
                addr: resp,
                len,
            },
        ],
    )
    .bytes()
}

/// The header of an ioctl buffer, field by field (native endian, as the kernel reads it).
fn set_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_ne_bytes());
}

#[test]
fn ioctl_headers_the_kernel_refuses() {
    with_sandbox(|sb| {
        sb.get_context().expect("GET_CONTEXT");
        let out = sb.base() + 0x2_0000;
        let good = query_port(out, 48);
        assert_eq!(sb.ioctl(&good), Ok(0), "the correct call works");

        assert_eq!(sb.ioctl_at(0xc018_1b02, sb.base()), Err(Errno::ENOTTY));
        assert_eq!(sb.ioctl_at(RDMA_VERBS_IOCTL, 0), Err(Errno::EFAULT));
        assert_eq!(
            sb.ioctl_at(RDMA_VERBS_IOCTL, sb.base() - 8),
            Err(Errno::EFAULT),
            "the header in the guard page"
        );
        // length disagrees with num_attrs.
        let mut b = good.clone();
        set_u16(&mut b, 0, 24 + 16 * 3);
        assert_eq!(sb.ioctl(&b), Err(Errno::EINVAL));
        let mut b = good.clone();
        set_u16(&mut b, 6, 3);
        assert_eq!(sb.ioctl(&b), Err(Errno::EINVAL));
        // Absurd: 65535 bytes and as many attributes as fit.
        let mut b = good.clone();
        set_u16(&mut b, 0, u16::MAX);
        set_u16(&mut b, 6, u16::MAX);
        assert_eq!(sb.ioctl(&b), Err(Errno::EINVAL));
        // Reserved bits.
        let mut b = good.clone();
        b[8] = 1;
        assert_eq!(sb.ioctl(&b), Err(Errno::EPROTONOSUPPORT));
        // Another driver's id.
        let mut b = good.clone();
        b[16] = 7;
        assert_eq!(sb.ioctl(&b), Err(Errno::EINVAL));
        // The attributes run into the guard page after the arena.
        let at = sb.put(mlx5_sim_uverbs::fuzzing::ARENA_LEN - 40, &good[..40]);
        assert_eq!(sb.ioctl_at(RDMA_VERBS_IOCTL, at), Err(Errno::EFAULT));
    });
}

#[test]
fn objects_methods_and_attributes_the_kernel_refuses() {
    with_sandbox(|sb| {
        let out = sb.base() + 0x2_0000;
        // Before GET_CONTEXT a method has no context to run on.
        assert_eq!(sb.ioctl(&query_port(out, 48)), Err(Errno::EINVAL));
        sb.get_context().expect("GET_CONTEXT");

        let unknown_object = IoctlBuf::build(0x0fff, 0, &[]).bytes();
        assert_eq!(sb.ioctl(&unknown_object), Err(Errno::EPROTONOSUPPORT));
        let unknown_method = IoctlBuf::build(c::UVERBS_OBJECT_DEVICE, 0x0fff, &[]).bytes();
        assert_eq!(sb.ioctl(&unknown_method), Err(Errno::EPROTONOSUPPORT));

        // An attribute the method does not know: refused when mandatory, ignored when not.
        let mut b = query_port(out, 48);
        let extra = b.len();
        b.extend_from_slice(&[0u8; 16]);
        let n = b.len() as u16;
        set_u16(&mut b, 0, n);
        set_u16(&mut b, 6, 3);
        set_u16(&mut b, extra, 0x0777);
        set_u16(&mut b, extra + 4, UVERBS_ATTR_F_MANDATORY);
        assert_eq!(sb.ioctl(&b), Err(Errno::EPROTONOSUPPORT));
        set_u16(&mut b, extra + 4, 0);
        assert_eq!(sb.ioctl(&b), Ok(0));
        // The same attribute twice.
        let mut b = query_port(out, 48);
        let first: Vec<u8> = b[24..40].to_vec();
        b.extend_from_slice(&first);
        let n = b.len() as u16;
        set_u16(&mut b, 0, n);
        set_u16(&mut b, 6, 3);
        assert_eq!(sb.ioctl(&b), Err(Errno::EINVAL));
        // A missing mandatory attribute (the port number).
        let mut b = query_port(out, 48);
        b.drain(24..40);
        let n = b.len() as u16;
        set_u16(&mut b, 0, n);
        set_u16(&mut b, 6, 1);
        assert_eq!(sb.ioctl(&b), Err(Errno::EINVAL));
        // The output in the guard page; shorter or longer than the answer (an output without
        // zero_trailing must be its exact size, `uverbs_process_attr`).
        assert_eq!(
            sb.ioctl(&query_port(sb.base() - 64, 48)),
            Err(Errno::EFAULT)
        );
        assert_eq!(sb.ioctl(&query_port(out, 8)), Err(Errno::EINVAL));
        assert_eq!(sb.ioctl(&query_port(out, u16::MAX)), Err(Errno::EINVAL));
        // A DevX command whose inbox is in the guard page.
        let devx = IoctlBuf::build(
            mlx5_ids::MLX5_IB_OBJECT_DEVX,
            mlx5_ids::MLX5_IB_METHOD_DEVX_OTHER,
            &[
                Attr::In {
                    id: mlx5_ids::MLX5_IB_ATTR_DEVX_OTHER_CMD_IN,
                    addr: sb.base() - 64,
                    len: 16,
                    inline: None,
                },
                Attr::Out {
                    id: mlx5_ids::MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT,
                    addr: out,
                    len: 16,
                },
            ],
        )
        .bytes();
        assert_eq!(sb.ioctl(&devx), Err(Errno::EFAULT));
        // A DevX command (QUERY_HCA_CAP) answered into 64 KiB that run past the arena's end.
        let query = sb.put(
            0x3_0000,
            &[0x01, 0x00, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        let far = sb.base() + mlx5_sim_uverbs::fuzzing::ARENA_LEN as u64 - 32;
        let devx = |out: u64| {
            IoctlBuf::build(
                mlx5_ids::MLX5_IB_OBJECT_DEVX,
                mlx5_ids::MLX5_IB_METHOD_DEVX_OTHER,
                &[
                    Attr::In {
                        id: mlx5_ids::MLX5_IB_ATTR_DEVX_OTHER_CMD_IN,
                        addr: query,
                        len: 16,
                        inline: None,
                    },
                    Attr::Out {
                        id: mlx5_ids::MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT,
                        addr: out,
                        len: u16::MAX,
                    },
                ],
            )
            .bytes()
        };
        assert_eq!(sb.ioctl(&devx(sb.base() + 0x4_0000)), Ok(0));
        assert_eq!(sb.ioctl(&devx(far)), Err(Errno::EFAULT));
    });
}

#[test]
fn write_commands_the_kernel_refuses() {
    with_sandbox(|sb| {
        let resp = sb.base() + 0x2_0000;
        assert_eq!(sb.write(&[]), Err(Errno::EINVAL));
        assert_eq!(sb.write(&[1, 0, 0]), Err(Errno::EINVAL));
        // Before GET_CONTEXT.
        assert_eq!(sb.write(&alloc_pd(resp)), Err(Errno::EINVAL));
        sb.get_context().expect("GET_CONTEXT");
        let good = alloc_pd(resp);
        assert_eq!(sb.write(&good), Ok(good.len()));
        let pd =
            w::ib_uverbs_alloc_pd_resp::read_from_bytes(&sb.get(0x2_0000, 4)).expect("response");
        // in_words disagrees with the length.
        let mut b = good.clone();
        b.push(0);
        assert_eq!(sb.write(&b), Err(Errno::EINVAL));
        // Reserved command bits; a command number nobody serves.
        let mut b = good.clone();
        b[3] = 0x40;
        assert_eq!(sb.write(&b), Err(Errno::EINVAL));
        let mut b = good.clone();
        b[0] = 0x7f;
        assert_eq!(sb.write(&b), Err(Errno::EOPNOTSUPP));
        // The response in the guard page: the PD is made, the copy fails, and the kernel
        // destroys what it made (nothing is left at close either way).
        assert_eq!(sb.write(&alloc_pd(sb.base() - 64)), Err(Errno::EFAULT));
        // The command itself unreadable; absurdly long.
        assert_eq!(sb.write_at(sb.base() - 64, 16), Err(Errno::EFAULT));
        assert_eq!(sb.write_at(sb.base(), 64 << 20), Err(Errno::E2BIG));
        assert_eq!(sb.write_at(u64::MAX - 4, 16), Err(Errno::EFAULT));
        // A handle that names nothing.
        let dealloc = |h: u32| {
            WriteFrame {
                command: cmd::DEALLOC_PD,
                extended: false,
                core_in: h.to_ne_bytes().to_vec(),
                uhw_in: Vec::new(),
                response: 0,
                out_len: 0,
                uhw_out_len: 0,
            }
            .emit()
        };
        assert_eq!(sb.write(&dealloc(pd.pd_handle + 1000)), Err(Errno::EINVAL));
        // The PD stays for close to release (a program that exits without cleaning up).
    });
}

#[test]
fn mappings_the_kernel_refuses() {
    with_sandbox(|sb| {
        let page = 4096;
        assert_eq!(
            sb.mmap(page, libc::PROT_WRITE, libc::MAP_SHARED, 0),
            Err(Errno::EINVAL),
            "before GET_CONTEXT there is no UAR"
        );
        sb.get_context().expect("GET_CONTEXT");
        assert_eq!(
            sb.mmap(
                page,
                libc::PROT_WRITE,
                libc::MAP_SHARED,
                0x7fff_0000 * page as i64
            ),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            sb.mmap(1 << 30, libc::PROT_WRITE, libc::MAP_SHARED, 0),
            Err(Errno::EINVAL)
        );
    });
}

fn run(data: &[u8]) -> Outcome {
    let _g = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    fuzz_uverbs(data)
}

#[test]
fn the_seed_program_runs() {
    // Not only refusals: the seed's calls succeed, so mutations start from working calls.
    with_sandbox(|sb| {
        sb.get_context().expect("GET_CONTEXT");
        let pd = alloc_pd(sb.base() + 0x2_0000);
        assert_eq!(sb.write(&pd), Ok(pd.len()));
        assert_eq!(sb.ioctl(&query_port(sb.base() + 0x2_0100, 48)), Ok(0));
    });
    let o = run(&seed_program());
    assert_eq!(
        o,
        Outcome {
            calls: 5,
            succeeded: 5
        },
        "GET_CONTEXT, ALLOC_PD, QUERY_PORT, UAR_OBJ_ALLOC and its mmap"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_programs(data in prop::collection::vec(any::<u8>(), 0..512)) {
        let o = run(&data);
        prop_assert!(o.succeeded <= o.calls);
    }

    #[test]
    fn mutated_seed_programs(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        tail in prop::collection::vec(any::<u8>(), 0..128),
    ) {
        let mut p = seed_program();
        for (i, v) in &edits {
            let i = i.index(p.len());
            p[i] = *v;
        }
        p.extend_from_slice(&tail);
        let o = run(&p);
        prop_assert!(o.succeeded <= o.calls);
    }
}
