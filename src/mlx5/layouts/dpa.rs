//! The BlueField-3 DPA in the PRM: capability page, general objects, EU registers.
//!
//! # What is public and what is not
//!
//! Public, and checked like every other layout:
//! - the general object type numbers (snap-rdma `src/mlx5_ifc.h` enum; docs/sources.md §3);
//! - `dpa_db_cq_mapping` (snap-rdma `src/mlx5_ifc.h`);
//! - `dpa_eq` (newer snap-rdma, `hnaarani/my-snap-rdma` `src/mlx5_ifc.h`);
//! - the CQ fields that bind a CQ to a DPA thread (`cqc.apu_cq`, `apu_element_type`,
//!   `c_eqn_or_apu_element`), declared in [`super::cq`].
//!
//! Not public: the object contexts of DPA_MEM, DPA_PROCESS, DPA_THREAD, DPA_OUTBOX, DPA_WINDOW
//! and DPA_UAR. The layouts below are **provisional** designs, each marked so in its
//! [`LayoutDesc`](crate::mlx5::layout::LayoutDesc) (`provisional: true`, shown by
//! `mlx5-dpa prm layouts`). They follow the shape every public general object context has
//! (`modify_field_select[0x40]` first, dword-aligned fields) and carry exactly the parameters
//! FlexIO's host API passes when it creates the object (docs/sources.md §4, DOCA FlexIO 24.01
//! `flexio.h` attribute structs). Each field's comment says what it is inferred from.
//!
//! These declarations are the only place the driver and the device model take these layouts
//! from: a capture of real firmware traffic corrects them here without touching callers, which
//! address fields by name only.
//!
//! The DPA capability page is public in newer snap-rdma; a few of its fields come from mstflint
//! only. The EU partition / EU group registers come from mstflint's adb files
//! (`NIC_DPA_EU_PARTITION_REG`, `NIC_DPA_EUG_REG`); the conversion of their bit positions to
//! mlx5_ifc numbering is our reading (docs/sources.md §3), so they are marked provisional.

use super::cmd::general_obj_in_cmd_hdr;
use crate::layout;

/// General object type numbers of the DPA (snap-rdma `src/mlx5_ifc.h`; docs/sources.md §3).
pub mod obj_type {
    /// A block of DPA memory owned by a process (snap: `HEAP_MEM`).
    pub const DPA_MEM: u16 = 0x28;
    pub const DPA_PROCESS: u16 = 0x2a;
    pub const DPA_THREAD: u16 = 0x2b;
    pub const RESERVED_QPN: u16 = 0x2c;
    pub const DPA_OUTBOX: u16 = 0x2d;
    pub const DB_CQ_MAPPING: u16 = 0x32;
    pub const DPA_EQ: u16 = 0x33;
    pub const DPA_WINDOW: u16 = 0x39;
    pub const EMULATED_DEV_EQ: u16 = 0x49;
    pub const DPA_UAR: u16 = 0x4a;
}

/// `cqc.apu_element_type` values (snap-rdma `src/mlx5_ifc.h` `MLX5_APU_ELEMENT_TYPE_*`).
pub mod apu_element_type {
    pub const THREAD: u8 = 0x0;
    pub const EQ: u8 = 0x1;
    pub const EMULATED_DEV_EQ: u8 = 0x2;
}

/// QUERY_HCA_CAP capability type of the DPA page (`op_mod = (0x24 << 1) | current`).
pub const DPA_CAP_TYPE: u16 = 0x24;

layout! {
    /// DPA capability page (QUERY_HCA_CAP type 0x24). Public in newer snap-rdma
    /// (`hnaarani/my-snap-rdma` `src/mlx5_ifc.h`, `mlx5_ifc_dpa_cap_bits`), whose names are used;
    /// fields marked (mstflint) come from mstflint's `embedded_program_capabilities`, converted to
    /// mlx5_ifc bit numbering by our reading (docs/sources.md §3).
    pub dpa_cap: 0x800 {
        thread_affinity_single_hart @ 0x0 : 0x1,
        thread_affinity_hart_group @ 0x1 : 0x1,
        log_max_num_dpa_mem_blocks @ 0x3 : 0x5,
        /// (mstflint)
        process_win_primary @ 0x8 : 0x1,
        /// (mstflint)
        process_win_secondary @ 0x9 : 0x1,
        log_max_dpa_mem @ 0xb : 0x5,
        /// (mstflint)
        dpa_auth_supported @ 0x10 : 0x1,
        /// (a public NVIDIA `mlx5_prm.h`, `mlx5_ifc_dpa_capabilities_bits`; docs/sources.md section 9)
        dpa_auth_enabled @ 0x11 : 0x1,
        log_max_dpa_threads_per_process @ 0x13 : 0x5,
        log_max_dpa_process @ 0x1b : 0x5,
        dpa_mem_block_size @ 0x20 : 0x20,
        log_max_dpa_thread @ 0x43 : 0x5,
        log_max_dpa_outbox @ 0x4b : 0x5,
        max_num_dpa_thread_per_group @ 0x50 : 0x10,
        log_max_dpa_window @ 0x63 : 0x5,
        /// (the same `mlx5_prm.h`; docs/sources.md section 9)
        log_max_dpa_partitions @ 0x6b : 0x5,
        /// (the same `mlx5_prm.h`)
        log_max_harts_per_partition @ 0x73 : 0x5,
        /// (the same `mlx5_prm.h`)
        log_max_vhca_per_partition @ 0x7b : 0x5,
        /// (mstflint)
        dpa_coredump_type @ 0x80 : 0x8,
        /// (mstflint)
        dpa_platform_version @ 0xa0 : 0x10,
        /// (mstflint)
        max_dpa_processes @ 0xb4 : 0xc,
        /// (mstflint)
        dpa_os_api_version @ 0xc0 : 0x20,
    }
}

layout! {
    /// DB_CQ_MAPPING object context: maps a device-emulation doorbell to a CQ.
    /// Offsets and widths as in snap-rdma `src/mlx5_ifc.h` (`mlx5_ifc_dpa_db_cq_mapping_bits`).
    pub dpa_db_cq_mapping: 0x200 {
        modify_field_select @ 0x0 : 0x40,
        map_state @ 0x50 : 0x4,
        queue_type @ 0x54 : 0x4,
        device_type @ 0x58 : 0x8,
        device_emulation_id @ 0x80 : 0x20,
        queue_id @ 0xa0 : 0x20,
        cqn @ 0xc0 : 0x20,
        dbr_handle @ 0xe0 : 0x20,
    }
}

layout! {
    /// CREATE_GENERAL_OBJECT input for DB_CQ_MAPPING (snap-rdma `src/mlx5_ifc.h`).
    pub create_dpa_db_cq_mapping_in: 0x280 {
        hdr @ 0x0 : general_obj_in_cmd_hdr,
        dpa_db_cq_mapping @ 0x80 : dpa_db_cq_mapping,
    }
}

layout! {
    /// DPA_PROCESS object context: a DPA program loaded into its own DPA memory.
    ///
    /// Inferred from FlexIO's `flexio_process_create(ctx, app, attr, &process)`: the device ELF
    /// (`app`: an image and its size) reaches firmware as host memory the firmware reads, hence an
    /// ELF UMEM reference; `attr` carries the PD. Queries report the state and error syndrome
    /// (`flexio_err_status_get`) and the DPA memory the process owns (`dumem_id`: the DUMEM alias
    /// id that `create_cq_in.cq_umem_id` takes for rings in DPA memory, docs/sources.md §3).
    #[provisional = "DPA_PROCESS context is not public; fields inferred from FlexIO flexio_process_create / err_status"]
    pub dpa_process: 0x300 {
        modify_field_select @ 0x0 : 0x40,
        /// The one public name of this context (FlexIO `flexio_dev_err.h`): 0 = ok, 1..63
        /// firmware / RTOS errors, 64..127 FlexIO SDK errors (0x40 after a clean
        /// `flexio_dev_process_finish`), 128..255 user errors. Its position is provisional.
        dpa_process_status @ 0x40 : 0x8,
        /// Firmware's reason for the error state; 0 while `state` is ok.
        error_syndrome @ 0x60 : 0x20,
        /// Protection domain of the process's DMA (FlexIO `flexio_process_attr.pd`).
        pd @ 0x88 : 0x18,
        /// UMEM holding the device ELF image (FlexIO `app` image), at `elf_umem_offset`.
        elf_umem_id @ 0xa0 : 0x20,
        elf_umem_offset @ 0xc0 : 0x40,
        /// Size in bytes of the ELF image.
        elf_size @ 0x100 : 0x40,
        /// Bytes of DPA memory reserved for the process beyond its ELF segments.
        heap_size @ 0x140 : 0x40,
        /// Output: id of the process memory as a DUMEM (what an alias of type
        /// [`crate::mlx5::layouts::vhca::alias_type::DPA_DUMEM`], 0xff13, names from another function).
        dumem_id @ 0x180 : 0x20,
        /// Output: exit status passed to the FlexIO-OS exit call (RTOS call 4).
        exit_status @ 0x1a0 : 0x20,
        /// Output: DPA virtual address where process memory (the DUMEM) starts.
        dumem_base @ 0x1c0 : 0x40,
        /// UMEM holding the application's crypto data (signature, DPA Application
        /// Authentication), at `sig_umem_offset`; `sig_size` 0: none. How FlexIO hands the
        /// signature to firmware is not public: these three fields are this project's.
        sig_umem_id @ 0x200 : 0x20,
        sig_umem_offset @ 0x240 : 0x40,
        sig_size @ 0x280 : 0x40,
    }
}

layout! {
    /// DPA_MEM object context: a block of DPA memory inside a process's address space.
    ///
    /// Inferred from FlexIO `flexio_buf_dev_alloc(process, size, &daddr)` and the capability
    /// fields `dpa_mem_block_size` / `log_max_num_dpa_mem_blocks` (docs/sources.md §3).
    #[provisional = "DPA_MEM (HEAP_MEM) context is not public; fields inferred from flexio_buf_dev_alloc"]
    pub dpa_mem: 0x100 {
        modify_field_select @ 0x0 : 0x40,
        /// Owning DPA_PROCESS object id.
        dpa_process_id @ 0x60 : 0x20,
        /// Size in bytes (rounded up to `dpa_mem_block_size` by firmware).
        size @ 0x80 : 0x40,
        /// Output: DPA virtual address of the block in the process address space.
        dpa_addr @ 0xc0 : 0x40,
    }
}

layout! {
    /// DPA_THREAD object context: an execution context bound to an entry point.
    ///
    /// Inferred from FlexIO `flexio_event_handler_attr` (`host_stub_func` -> entry symbol
    /// address, `arg`, `thread_local_storage_daddr`, `affinity {type, id}`, `continuable`) and
    /// the default window / outbox a handler starts every activation with.
    #[provisional = "DPA_THREAD context is not public; fields inferred from flexio_event_handler_attr"]
    pub dpa_thread: 0x300 {
        modify_field_select @ 0x0 : 0x40,
        /// Output: 0 = idle (waiting for an event), 1 = running, 2 = finished, 3 = error.
        state @ 0x40 : 0x8,
        /// Affinity: 0 = none, 1 = strict (one EU), 2 = EU group (`flexio_affinity_type`).
        affinity_type @ 0x4e : 0x2,
        /// EU id or EU group id for affinity types 1 and 2.
        affinity_id @ 0x50 : 0x10,
        /// Owning DPA_PROCESS object id.
        dpa_process_id @ 0x60 : 0x20,
        /// DPA address of the entry function `void f(uint64_t arg)`.
        entry_point @ 0x80 : 0x40,
        /// Argument passed in a0 at each activation (`flexio_event_handler_attr.arg`).
        user_arg @ 0xc0 : 0x40,
        /// DPA address of the thread-local storage (`thread_local_storage_daddr`), 0 for none.
        thread_local_storage_daddr @ 0x100 : 0x40,
        /// DPA_OUTBOX id configured at the start of each activation (0 for none).
        default_outbox_id @ 0x140 : 0x20,
        /// DPA_WINDOW id configured at the start of each activation (0 for none).
        default_window_id @ 0x160 : 0x20,
        /// Whether an unfinished activation may continue after a new event (`continuable`).
        continuable @ 0x180 : 0x1,
        /// Output (provisional, the model's): the EU the last activation ran on.
        last_eu @ 0x1a0 : 0x10,
        /// Output: number of activations run so far.
        activation_count @ 0x1c0 : 0x40,
        /// Output (provisional, the model's): the value in `a0` when the entry function last
        /// returned (the RPC result of `flexio_process_call`).
        return_value @ 0x200 : 0x40,
    }
}

/// `dpa_thread.state` values (provisional).
pub mod dpa_thread_state {
    /// Waiting for an event (a completion on a CQ bound to the thread).
    pub const IDLE: u8 = 0;
    /// Queued for or running on an EU. Writing it (MODIFY) runs the thread once.
    pub const RUNNING: u8 = 1;
    /// The entry function returned or called the finish RTOS call; events are ignored.
    pub const FINISHED: u8 = 2;
    /// The thread faulted or exceeded its instruction budget.
    pub const ERROR: u8 = 3;
}

/// `dpa_thread.modify_field_select` bits (provisional).
pub mod dpa_thread_modify {
    pub const USER_ARG: u64 = 1 << 0;
    pub const STATE: u64 = 1 << 1;
}

/// `dpa_process.dpa_process_status` values. FlexIO (`flexio_dev_err.h`) reserves 1..63 for
/// firmware / RTOS errors and reports 0x40 after a clean exit; the individual error numbers
/// below are the model's (provisional).
pub mod dpa_process_status {
    pub const OK: u8 = 0x00;
    /// A thread faulted (memory access, illegal instruction, misaligned jump, `ebreak`).
    pub const FAULT: u8 = 0x01;
    /// A thread exceeded its per-activation instruction budget (watchdog).
    pub const WATCHDOG: u8 = 0x02;
    /// A thread made an RTOS call (`ecall`) the OS does not know.
    pub const BAD_RTOS_CALL: u8 = 0x03;
    /// The process called EXIT_PROCESS; `exit_status` holds its argument.
    pub const EXITED: u8 = 0x40;
}

layout! {
    /// DPA_OUTBOX object context: a doorbell page through which DPA code rings the queues of
    /// one UAR (docs/sources.md §4: outboxes are per UAR; `flexio_outbox_create(process, uar, &outbox)`).
    #[provisional = "DPA_OUTBOX context is not public; fields inferred from flexio_outbox_create"]
    pub dpa_outbox: 0x100 {
        modify_field_select @ 0x0 : 0x40,
        dpa_process_id @ 0x60 : 0x20,
        /// The UAR (host UAR page index or DPA_UAR id) whose queues this outbox may ring.
        uar @ 0x88 : 0x18,
    }
}

layout! {
    /// DPA_WINDOW object context: an aperture through which DPA code reads and writes host
    /// memory via an mkey set at run time (`flexio_window_create(process, pd, &window)`; the
    /// device writes the mkey to `window_config_base`, docs/sources.md §4).
    #[provisional = "DPA_WINDOW context is not public; fields inferred from flexio_window_create"]
    pub dpa_window: 0x100 {
        modify_field_select @ 0x0 : 0x40,
        dpa_process_id @ 0x60 : 0x20,
        /// PD that mkeys used through this window must belong to.
        pd @ 0x88 : 0x18,
    }
}

layout! {
    /// DPA_EQ object context: an event queue in DPA memory whose EQEs a DPA thread consumes
    /// (`apu_element_type` EQ). Public: newer snap-rdma (`hnaarani/my-snap-rdma`
    /// `src/mlx5_ifc.h`, `mlx5_ifc_dpa_eq_bits`), which creates it through DevX with the ring in
    /// the process memory (`umem_id` = DUMEM id, `umem_offset` = DPA address - DUMEM base).
    pub dpa_eq: 0x200 {
        modify_field_select @ 0x0 : 0x40,
        status @ 0x80 : 0x4,
        ec @ 0x8d : 0x1,
        oi @ 0x8e : 0x1,
        st @ 0x94 : 0x4,
        /// log2 of the number of 64-byte EQEs.
        log_umem_size @ 0x9a : 0x6,
        uar_page @ 0xc8 : 0x18,
        umem_id @ 0xe0 : 0x20,
        umem_offset @ 0x100 : 0x40,
        consumer_counter @ 0x148 : 0x18,
        producer_counter @ 0x168 : 0x18,
    }
}

layout! {
    /// DPA_UAR object context: a UAR usable from DPA code, extending a host UAR to the process
    /// (FlexIO `flexio_uar_create` / `flexio_uar_extend`).
    #[provisional = "DPA_UAR context is not public; fields inferred from flexio_uar_extend"]
    pub dpa_uar: 0x100 {
        modify_field_select @ 0x0 : 0x40,
        dpa_process_id @ 0x60 : 0x20,
        /// Host UAR page index being extended to the process.
        uar_page @ 0x88 : 0x18,
    }
}

layout! {
    /// DPA_PROCESS_COREDUMP input (opcode 0xb2b, docs/sources.md §3: the opcode is public, its layout
    /// is not). The model's design: the process whose first fault or watchdog expiry is dumped.
    #[provisional = "DPA_PROCESS_COREDUMP layout is not public; the model's own design"]
    pub dpa_process_coredump_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        /// The DPA_PROCESS object id.
        dpa_process_id @ 0x40 : 0x20,
    }
}

layout! {
    /// DPA_PROCESS_COREDUMP output: `dump_size` bytes of a [`dpa_coredump`] image follow the
    /// 16-byte header. Firmware refuses the command (`BAD_RES_STATE`) while the process has
    /// not failed, and `BAD_OUTP_LEN` when the output mailbox cannot hold the image (at most
    /// [`DPA_COREDUMP_MAX_BYTES`]).
    #[provisional = "DPA_PROCESS_COREDUMP layout is not public; the model's own design"]
    pub dpa_process_coredump_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        /// Bytes of the image in `dump`.
        dump_size @ 0x40 : 0x20,
        dump @ 0x80 : [0x8; flex],
    }
}

/// Largest coredump image: the header, [`DPA_COREDUMP_MAX_REGIONS`] regions and
/// [`DPA_COREDUMP_MAX_STACK`] stack bytes.
pub const DPA_COREDUMP_MAX_BYTES: usize =
    <dpa_coredump::Layout as crate::mlx5::layout::Layout>::SIZE_BYTES
        + DPA_COREDUMP_MAX_REGIONS
            * <dpa_coredump_region::Layout as crate::mlx5::layout::Layout>::SIZE_BYTES
        + DPA_COREDUMP_MAX_STACK;
/// Most memory regions a coredump lists (`regions_truncated` says when there were more).
pub const DPA_COREDUMP_MAX_REGIONS: usize = 64;
/// Most stack bytes a coredump carries (from the faulting thread's `sp` upwards).
pub const DPA_COREDUMP_MAX_STACK: usize = 1024;
/// `dpa_coredump.magic`: "DPAC".
pub const DPA_COREDUMP_MAGIC: u32 = 0x4450_4143;
/// `dpa_coredump.version` this layout describes.
pub const DPA_COREDUMP_VERSION: u16 = 1;

layout! {
    /// A DPA coredump image (the model's format, provisional): this header, then
    /// `num_regions` [`dpa_coredump_region`] entries, then `stack_len` bytes of the faulting
    /// thread's stack copied from DPA address `stack_addr`. Every field is big-endian like
    /// the rest of the PRM; `header_size` is the byte offset of the first region, so a newer
    /// version may append fields.
    ///
    /// `cause`: 1 watchdog (instruction budget exceeded), 2 memory fault, 3 illegal
    /// instruction, 4 misaligned jump or branch target, 5 `ebreak`, 6 unknown RTOS call, 7 stack
    /// overflow (a memory fault in the guard below the thread's stack).
    /// For memory faults (and stack overflows) `access` is 1 fetch, 2 load, 3 store, `access_size` the bytes
    /// accessed and `mem_error` 1 unmapped, 2 denied (permissions), 3 misaligned, 4 refused by
    /// a device register (`device_code` says which, see docs/model-dpa.md). For an
    /// unknown RTOS call the call number is `gpr[17]` (`a7`, all 64 bits); `device_code` is 0.
    #[provisional = "DPA coredump format is not public; the model's own design"]
    pub dpa_coredump: 0xa80 {
        magic @ 0x0 : 0x20,
        version @ 0x20 : 0x10,
        /// Bytes of this header (offset of the first region entry).
        header_size @ 0x30 : 0x10,
        cause @ 0x40 : 0x8,
        access @ 0x48 : 0x8,
        access_size @ 0x50 : 0x8,
        mem_error @ 0x58 : 0x8,
        /// EU the activation ran on.
        eu @ 0x60 : 0x10,
        /// Set when the process had more regions than the image lists.
        regions_truncated @ 0x70 : 0x1,
        num_regions @ 0x78 : 0x8,
        dpa_process_id @ 0x80 : 0x20,
        dpa_thread_id @ 0xa0 : 0x20,
        /// Program counter of the faulting instruction (for the watchdog: the next one).
        pc @ 0xc0 : 0x40,
        /// Address of the failed access or jump target; 0 otherwise.
        fault_addr @ 0x100 : 0x40,
        /// Raw 16- or 32-bit encoding of an illegal instruction; 0 otherwise.
        insn @ 0x140 : 0x20,
        device_code @ 0x160 : 0x20,
        /// Instructions retired by the activation.
        instret @ 0x180 : 0x40,
        /// The thread's activation number (1 = its first).
        activation @ 0x1c0 : 0x40,
        /// DPA address of the stack bytes that follow the regions.
        stack_addr @ 0x200 : 0x40,
        stack_len @ 0x240 : 0x20,
        /// The process's `error_syndrome`.
        error_syndrome @ 0x260 : 0x20,
        /// x0..x31 (x1 = ra, x2 = sp, x4 = tp, x10 = a0, x17 = a7).
        gpr @ 0x280 : [0x40; 32],
    }
}

layout! {
    /// One memory region of a process in a [`dpa_coredump`] (provisional, the model's).
    /// `perms`: bit 0 read, bit 1 write, bit 2 execute, bit 3 MMIO (device registers).
    /// `kind`: 1 text, 2 data, 3 heap, 4 DPA_MEM block, 5 stack, 6 thread context,
    /// 7 outbox page, 8 window aperture, 9 window configuration register.
    #[provisional = "DPA coredump format is not public; the model's own design"]
    pub dpa_coredump_region: 0x100 {
        base_addr @ 0x0 : 0x40,
        size @ 0x40 : 0x40,
        perms @ 0x80 : 0x8,
        kind @ 0x88 : 0x8,
        /// The object the region belongs to (DPA_MEM, DPA_OUTBOX, DPA_WINDOW or thread id).
        obj_id @ 0xa0 : 0x20,
    }
}

layout! {
    /// NIC_DPA_EU_PARTITION_REG (register id 0xC015), 0x300 bytes: creates, modifies or
    /// destroys an EU partition (mstflint `register_access_table.adb`; docs/sources.md §3).
    #[provisional = "bit positions converted from mstflint adb by our reading"]
    pub nic_dpa_eu_partition_reg: 0x1800 {
        /// CREATE 0 / MODIFY 1 / DESTROY 2.
        operation @ 0x1 : 0x3,
        eu_partition_id @ 0x10 : 0x10,
        modify_field_select @ 0x20 : 0x20,
        num_vhca_id @ 0x48 : 0x8,
        max_num_eug @ 0x50 : 0x10,
        member_mask @ 0x200 : [0x20; 32],
        /// 0x200 bytes (mstflint adb; docs/sources.md section 9).
        vhca_id @ 0x600 : [0x10; 256],
    }
}

layout! {
    /// NIC_DPA_EUG_REG (register id 0xC012), 0x100 bytes: creates, modifies or destroys an EU
    /// group (mstflint `register_access_table.adb`; docs/sources.md §3).
    #[provisional = "bit positions converted from mstflint adb by our reading"]
    pub nic_dpa_eug_reg: 0x800 {
        /// CREATE 0 / MODIFY 1 / DESTROY 2.
        operation @ 0x1 : 0x3,
        partition_id_valid @ 0x4 : 0x1,
        eug_id @ 0x10 : 0x10,
        /// At byte 0x4 (mstflint adb; docs/sources.md section 9): which fields a MODIFY changes.
        modify_field_select @ 0x20 : 0x20,
        partition_id @ 0x70 : 0x10,
        /// 0x10 bytes (mstflint adb; docs/sources.md section 9).
        eug_name @ 0x80 : [0x8; 16],
        member_mask @ 0x200 : [0x20; 32],
    }
}

/// Register ids (mstflint `register_access_table.adb`; docs/sources.md §3).
pub mod reg_id {
    pub const NIC_CAP_EXT_REG: u16 = 0xc011;
    pub const NIC_DPA_EUG_REG: u16 = 0xc012;
    pub const NIC_DPA_PERF_CTRL_REG: u16 = 0xc014;
    pub const NIC_DPA_EU_PARTITION_REG: u16 = 0xc015;
}
