//! Command opcodes and how the kernel's DevX interface routes each one.
//!
//! Values: the kernel's `include/linux/mlx5/mlx5_ifc.h` (`MLX5_CMD_OP_*`), rdma-core
//! `providers/mlx5/mlx5_ifc.h`, DPDK `drivers/common/mlx5/mlx5_prm.h`. The DPA partition commands
//! (0xb26..0xb2b) are named in public material but their layouts are not (see docs/sources.md §3).
//!
//! Routing: the kernel (`drivers/infiniband/hw/mlx5/devx.c`, `devx_is_obj_create_cmd`,
//! `devx_is_obj_modify_cmd`, `devx_is_obj_query_cmd`, `devx_is_general_cmd`) accepts each opcode
//! through exactly one DevX method; [`Opcode::devx_method`] gives that method so that a raw
//! inbox reaches firmware the same way rdma-core would send it.

use core::fmt;

/// A command opcode (`opcode` at bits 0x0..0x10 of every inbox).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Opcode(pub u16);

/// Which DevX method carries a command (docs/sources.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevxMethod {
    /// `MLX5_IB_METHOD_DEVX_OTHER`: 0xb00..0xd00 and a whitelist of queries.
    General,
    /// `MLX5_IB_METHOD_DEVX_OBJ_CREATE`: returns an object handle; the kernel builds the destroy.
    ObjCreate,
    /// `MLX5_IB_METHOD_DEVX_OBJ_MODIFY` on the object's handle.
    ObjModify,
    /// `MLX5_IB_METHOD_DEVX_OBJ_QUERY` on the object's handle.
    ObjQuery,
    /// Destroy commands are never sent by user space: `MLX5_IB_METHOD_DEVX_OBJ_DESTROY` on the
    /// handle makes the kernel send the destroy command it built at create time.
    ObjDestroy,
    /// Not accepted from user space through DevX (e.g. CREATE_EQ, ALLOC_UAR, SET_ISSI).
    KernelOnly,
}

macro_rules! opcodes {
    ($( $name:ident = $val:literal => $method:ident ),* $(,)?) => {
        impl Opcode {
            $( pub const $name: Opcode = Opcode($val); )*

            /// Every opcode this crate knows, with its PRM name.
            pub const ALL: &'static [(Opcode, &'static str)] = &[ $( (Opcode($val), stringify!($name)) ),* ];

            /// PRM name without `MLX5_CMD_OP_`, or `None` for an opcode this crate does not know.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $val => Some(stringify!($name)), )*
                    _ => None,
                }
            }

            /// How the kernel's DevX interface accepts this opcode (see module docs). Unknown
            /// opcodes in 0xb00..0xd00 are general commands, like the kernel treats them.
            pub const fn devx_method(self) -> DevxMethod {
                match self.0 {
                    $( $val => DevxMethod::$method, )*
                    0xb00..=0xcff => DevxMethod::General,
                    _ => DevxMethod::KernelOnly,
                }
            }
        }
    };
}

opcodes! {
    QUERY_HCA_CAP = 0x100 => General,
    QUERY_ADAPTER = 0x101 => General,
    QUERY_ISSI = 0x10a => General,
    SET_ISSI = 0x10b => KernelOnly,
    CREATE_MKEY = 0x200 => ObjCreate,
    QUERY_MKEY = 0x201 => ObjQuery,
    DESTROY_MKEY = 0x202 => ObjDestroy,
    CREATE_EQ = 0x301 => KernelOnly,
    DESTROY_EQ = 0x302 => KernelOnly,
    QUERY_EQ = 0x303 => KernelOnly,
    CREATE_CQ = 0x400 => ObjCreate,
    DESTROY_CQ = 0x401 => ObjDestroy,
    QUERY_CQ = 0x402 => ObjQuery,
    MODIFY_CQ = 0x403 => ObjModify,
    CREATE_QP = 0x500 => ObjCreate,
    DESTROY_QP = 0x501 => ObjDestroy,
    RST2INIT_QP = 0x502 => ObjModify,
    INIT2RTR_QP = 0x503 => ObjModify,
    RTR2RTS_QP = 0x504 => ObjModify,
    RTS2RTS_QP = 0x505 => ObjModify,
    SQERR2RTS_QP = 0x506 => ObjModify,
    QP_2ERR = 0x507 => ObjModify,
    QP_2RST = 0x50a => ObjModify,
    QUERY_QP = 0x50b => ObjQuery,
    INIT2INIT_QP = 0x50e => ObjModify,
    QUERY_VPORT_STATE = 0x750 => General,
    QUERY_ESW_VPORT_CONTEXT = 0x752 => General,
    QUERY_NIC_VPORT_CONTEXT = 0x754 => General,
    QUERY_ROCE_ADDRESS = 0x760 => General,
    QUERY_HCA_VPORT_CONTEXT = 0x762 => General,
    ALLOC_Q_COUNTER = 0x771 => ObjCreate,
    DEALLOC_Q_COUNTER = 0x772 => ObjDestroy,
    QUERY_Q_COUNTER = 0x773 => ObjQuery,
    ALLOC_PD = 0x800 => ObjCreate,
    DEALLOC_PD = 0x801 => ObjDestroy,
    ALLOC_UAR = 0x802 => KernelOnly,
    DEALLOC_UAR = 0x803 => KernelOnly,
    ACCESS_REGISTER = 0x805 => KernelOnly,
    NOP = 0x80d => General,
    ALLOC_TRANSPORT_DOMAIN = 0x816 => ObjCreate,
    DEALLOC_TRANSPORT_DOMAIN = 0x817 => ObjDestroy,
    CREATE_TIR = 0x900 => ObjCreate,
    MODIFY_TIR = 0x901 => ObjModify,
    DESTROY_TIR = 0x902 => ObjDestroy,
    QUERY_TIR = 0x903 => ObjQuery,
    CREATE_SQ = 0x904 => ObjCreate,
    MODIFY_SQ = 0x905 => ObjModify,
    DESTROY_SQ = 0x906 => ObjDestroy,
    QUERY_SQ = 0x907 => ObjQuery,
    CREATE_RQ = 0x908 => ObjCreate,
    MODIFY_RQ = 0x909 => ObjModify,
    DESTROY_RQ = 0x90a => ObjDestroy,
    QUERY_RQ = 0x90b => ObjQuery,
    CREATE_RMP = 0x90c => ObjCreate,
    MODIFY_RMP = 0x90d => ObjModify,
    DESTROY_RMP = 0x90e => ObjDestroy,
    QUERY_RMP = 0x90f => ObjQuery,
    CREATE_TIS = 0x912 => ObjCreate,
    MODIFY_TIS = 0x913 => ObjModify,
    DESTROY_TIS = 0x914 => ObjDestroy,
    QUERY_TIS = 0x915 => ObjQuery,
    CREATE_RQT = 0x916 => ObjCreate,
    MODIFY_RQT = 0x917 => ObjModify,
    DESTROY_RQT = 0x918 => ObjDestroy,
    QUERY_RQT = 0x919 => ObjQuery,
    SET_FLOW_TABLE_ROOT = 0x92f => KernelOnly,
    CREATE_FLOW_TABLE = 0x930 => ObjCreate,
    DESTROY_FLOW_TABLE = 0x931 => ObjDestroy,
    QUERY_FLOW_TABLE = 0x932 => ObjQuery,
    CREATE_FLOW_GROUP = 0x933 => ObjCreate,
    DESTROY_FLOW_GROUP = 0x934 => ObjDestroy,
    QUERY_FLOW_GROUP = 0x935 => ObjQuery,
    SET_FLOW_TABLE_ENTRY = 0x936 => ObjCreate,
    QUERY_FLOW_TABLE_ENTRY = 0x937 => ObjQuery,
    DELETE_FLOW_TABLE_ENTRY = 0x938 => ObjDestroy,
    ALLOC_FLOW_COUNTER = 0x939 => ObjCreate,
    DEALLOC_FLOW_COUNTER = 0x93a => ObjDestroy,
    QUERY_FLOW_COUNTER = 0x93b => ObjQuery,
    MODIFY_FLOW_TABLE = 0x93c => ObjModify,
    CREATE_GENERAL_OBJECT = 0xa00 => ObjCreate,
    MODIFY_GENERAL_OBJECT = 0xa01 => ObjModify,
    QUERY_GENERAL_OBJECT = 0xa02 => ObjQuery,
    DESTROY_GENERAL_OBJECT = 0xa03 => ObjDestroy,
    CREATE_UMEM = 0xa08 => KernelOnly,
    DESTROY_UMEM = 0xa0a => KernelOnly,
    ACCESS_REGISTER_USER = 0xb0c => General,
    ALLOW_OTHER_VHCA_ACCESS = 0xb16 => General,
    // Named in public material (docs/sources.md §3); layouts not public.
    CREATE_DPA_PARTITION = 0xb26 => General,
    DESTROY_DPA_PARTITION = 0xb27 => General,
    QUERY_DPA_PARTITION = 0xb28 => General,
    MODIFY_DPA_PARTITION = 0xb29 => General,
    QUERY_DPA_PARTITIONS = 0xb2a => General,
    DPA_PROCESS_COREDUMP = 0xb2b => General,
}

impl Opcode {
    /// Whether this is one of the QP state transitions (`RST2INIT_QP` .. `QP_2RST`), the
    /// commands that modify a QP.
    pub const fn is_qp_transition(self) -> bool {
        matches!(
            self,
            Opcode::RST2INIT_QP
                | Opcode::INIT2INIT_QP
                | Opcode::INIT2RTR_QP
                | Opcode::RTR2RTS_QP
                | Opcode::RTS2RTS_QP
                | Opcode::SQERR2RTS_QP
                | Opcode::QP_2ERR
                | Opcode::QP_2RST
        )
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({:#x})", self.0),
            None => write!(f, "opcode {:#x}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn routing_follows_the_kernel_rules() {
        assert_eq!(Opcode::CREATE_CQ.devx_method(), DevxMethod::ObjCreate);
        assert_eq!(Opcode::QUERY_HCA_CAP.devx_method(), DevxMethod::General);
        assert_eq!(Opcode::RTR2RTS_QP.devx_method(), DevxMethod::ObjModify);
        assert_eq!(Opcode::CREATE_EQ.devx_method(), DevxMethod::KernelOnly);
        assert_eq!(Opcode(0xbff).devx_method(), DevxMethod::General);
        assert_eq!(Opcode(0x7777).devx_method(), DevxMethod::KernelOnly);
        assert_eq!(Opcode::CREATE_CQ.to_string(), "CREATE_CQ (0x400)");
        let mut seen = std::collections::HashSet::new();
        for (op, _) in Opcode::ALL {
            assert!(seen.insert(op.0), "duplicate opcode {op}");
        }
    }
}
