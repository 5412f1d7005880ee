//! Every validation the firmware model performs, each with its own syndrome.
//!
//! Real firmware answers a refused command with a status (PRM status codes, docs/sources.md §2) and a
//! 32-bit syndrome that names the failed check. Real syndromes are opaque numbers; the model's
//! are its own (`0x5131_xxxx`, "model"), one per check, so that a test or a researcher can tell
//! exactly which rule refused a mailbox: `mlx5-dpa --sim cmd` prints the description.

use mlx5_dpa::mlx5::Status;

/// One validation rule: the status it answers with, its syndrome and what it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// PRM status returned when the check fails.
    pub status: Status,
    /// The model's syndrome for this check.
    pub syndrome: u32,
    /// What was wrong, for messages.
    pub what: &'static str,
}

impl Check {
    /// The check that produced `syndrome`, if it is one of the model's.
    pub fn by_syndrome(syndrome: u32) -> Option<&'static Check> {
        ALL.iter().find(|c| c.syndrome == syndrome)
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({:#010x}): {}",
            self.status, self.syndrome, self.what
        )
    }
}

macro_rules! checks {
    ($( $name:ident = $syn:literal, $status:ident, $what:literal; )*) => {
        $(
            #[doc = $what]
            pub const $name: Check = Check { status: Status::$status, syndrome: $syn, what: $what };
        )*
        /// Every check, for lookups and the uniqueness test.
        pub const ALL: &[Check] = &[ $( $name ),* ];
    };
}

checks! {
    // Mailbox and command level.
    INBOX_TOO_SHORT = 0x5131_0001, BAD_INP_LEN, "inbox shorter than the command's input layout";
    OUTBOX_TOO_SHORT = 0x5131_0002, BAD_OUTP_LEN, "outbox shorter than the command's output layout";
    UNKNOWN_OPCODE = 0x5131_0003, BAD_OP, "opcode not implemented by this firmware";
    BAD_OP_MOD = 0x5131_0004, BAD_PARAM, "op_mod not valid for this opcode";
    FAULT_INJECTED = 0x5131_0005, INT_ERR, "failure injected by the model's fault plan";
    WRONG_UID = 0x5131_0006, BAD_PARAM, "object belongs to another user context (uid)";
    UNKNOWN_CAP_TYPE = 0x5131_0007, BAD_PARAM, "QUERY_HCA_CAP for a capability type this device lacks";
    NOT_SUPPORTED = 0x5131_0008, BAD_OP, "feature not present in this capability profile";
    RESERVED_SET = 0x5131_0009, BAD_PARAM, "a field this firmware requires to be zero is set";

    // Objects and references.
    NO_SUCH_PD = 0x5131_0101, BAD_RES, "pd does not exist";
    NO_SUCH_TD = 0x5131_0102, BAD_RES, "transport domain does not exist";
    NO_SUCH_MKEY = 0x5131_0103, BAD_RES, "mkey does not exist";
    NO_SUCH_CQ = 0x5131_0104, BAD_RES, "cqn does not exist";
    NO_SUCH_SQ = 0x5131_0105, BAD_RES, "sqn does not exist";
    NO_SUCH_RQ = 0x5131_0106, BAD_RES, "rqn does not exist";
    NO_SUCH_RMP = 0x5131_0107, BAD_RES, "rmpn does not exist";
    NO_SUCH_TIS = 0x5131_0108, BAD_RES, "tisn does not exist";
    NO_SUCH_TIR = 0x5131_0109, BAD_RES, "tirn does not exist";
    NO_SUCH_RQT = 0x5131_010a, BAD_RES, "rqtn does not exist";
    NO_SUCH_FLOW_TABLE = 0x5131_010b, BAD_RES, "flow table does not exist";
    NO_SUCH_FLOW_GROUP = 0x5131_010c, BAD_RES, "flow group does not exist";
    NO_SUCH_FTE = 0x5131_010d, BAD_RES, "flow table entry does not exist";
    NO_SUCH_QP = 0x5131_010e, BAD_RES, "qpn does not exist";
    NO_SUCH_UMEM = 0x5131_010f, BAD_RES, "umem id does not exist";
    NO_SUCH_UAR = 0x5131_0110, BAD_RES, "uar_page is not an allocated UAR";
    NO_SUCH_EQ = 0x5131_0111, BAD_RES, "EQ number does not exist";
    NO_SUCH_OBJECT = 0x5131_0112, BAD_RES, "general object does not exist";
    NO_SUCH_DPA_PROCESS = 0x5131_0113, BAD_RES, "DPA process does not exist";
    NO_SUCH_DPA_THREAD = 0x5131_0114, BAD_RES, "DPA thread does not exist";
    NO_SUCH_DPA_EQ = 0x5131_0115, BAD_RES, "DPA EQ does not exist";
    WRONG_OBJ_TYPE = 0x5131_0116, BAD_PARAM, "general object of another type than the command names";
    UNKNOWN_OBJ_TYPE = 0x5131_0117, BAD_PARAM, "general object type not supported by this device";
    OBJECT_IN_USE = 0x5131_0118, RES_BUSY, "object is still referenced by another object";
    FLOW_INDEX_TAKEN = 0x5131_0119, BAD_PARAM, "flow_index already holds an entry";
    FLOW_INDEX_OUTSIDE_GROUP = 0x5131_011a, BAD_PARAM, "flow_index is not inside the group's range";
    GROUP_RANGE_BAD = 0x5131_011b, BAD_PARAM, "flow group range empty, overlapping or outside the table";
    TABLE_TYPE_MISMATCH = 0x5131_011c, BAD_PARAM, "table_type differs from the table's";
    NO_SUCH_DPA_WINDOW = 0x5131_011d, BAD_RES, "DPA window does not exist";
    NO_SUCH_DPA_OUTBOX = 0x5131_011e, BAD_RES, "DPA outbox does not exist";
    NO_SUCH_ALIAS_GRANT = 0x5131_011f, BAD_PARAM, "no ALLOW_OTHER_VHCA_ACCESS grant matches the alias";
    NO_SUCH_Q_COUNTER = 0x5131_0120, BAD_RES, "counter_set_id is not an allocated Q counter";
    NO_SUCH_FLOW_COUNTER = 0x5131_0121, BAD_RES, "flow_counter_id is not an allocated flow counter";

    // Field values.
    BAD_LOG_SIZE = 0x5131_0201, BAD_PARAM, "queue log size outside what the device supports";
    BAD_STRIDE = 0x5131_0202, BAD_PARAM, "log_wq_stride not allowed for this queue";
    BAD_CQE_SIZE = 0x5131_0203, BAD_PARAM, "cqe_sz not 64 or 128 bytes";
    BAD_WQ_TYPE = 0x5131_0204, BAD_PARAM, "wq_type not allowed for this queue";
    BAD_STATE_FIELD = 0x5131_0205, BAD_PARAM, "initial or target state is not a valid state value";
    BAD_ACCESS_MODE = 0x5131_0206, BAD_PARAM, "mkey access mode not supported";
    BAD_UMEM_RANGE = 0x5131_0207, BAD_PARAM, "object does not fit inside its umem";
    UMEM_NOT_VALID = 0x5131_0208, BAD_PARAM, "ring or doorbell record is not in a umem (umem_valid clear)";
    BAD_ALIGNMENT = 0x5131_0209, BAD_PARAM, "address or offset is not aligned as required";
    BAD_TABLE_TYPE = 0x5131_020a, BAD_PARAM, "flow table type not supported";
    BAD_MATCH_CRITERIA = 0x5131_020b, BAD_PARAM, "match_criteria_enable names criteria this device cannot match";
    BAD_ACTION = 0x5131_020c, BAD_PARAM, "flow action not supported or inconsistent with the destinations";
    BAD_DESTINATION = 0x5131_020d, BAD_PARAM, "flow destination type not supported";
    BAD_DISP_TYPE = 0x5131_020e, BAD_PARAM, "TIR disp_type not supported";
    BAD_RQT_SIZE = 0x5131_020f, BAD_PARAM, "RQT actual size zero or above its max size";
    BAD_QP_TYPE = 0x5131_0210, BAD_PARAM, "QP service type not supported";
    BAD_MTU = 0x5131_0211, BAD_PARAM, "path MTU not a valid value";
    BAD_LENGTH = 0x5131_0212, BAD_PARAM, "length is zero or overflows";
    BAD_AFFINITY = 0x5131_0213, BAD_PARAM, "DPA thread affinity names no existing EU or group";
    BAD_ENTRY_POINT = 0x5131_0214, BAD_PARAM, "DPA thread entry point is zero";
    BAD_MODIFY_SELECT = 0x5131_0215, BAD_PARAM, "modify_field_select names fields this object cannot modify";
    BAD_CQ_TARGET = 0x5131_0216, BAD_PARAM, "CQ event target (apu element type) not valid";
    BAD_REGISTER = 0x5131_0217, BAD_PARAM, "register id not accessible through ACCESS_REGISTER_USER";
    BAD_REGISTER_OP = 0x5131_0218, BAD_PARAM, "register operation not valid";
    BAD_ACCESS_KEY = 0x5131_0219, BAD_PARAM, "alias access key does not match the grant";
    CROSS_PROCESS = 0x5131_021a, BAD_PARAM, "object belongs to another DPA process";
    BAD_MODERATION = 0x5131_021b, BAD_PARAM, "CQ moderation values not supported";
    BAD_ELF_RANGE = 0x5131_021c, BAD_PARAM, "DPA process image does not fit its umem";
    ACCESS_NOT_GRANTED = 0x5131_021d, BAD_PARAM, "mkey asks for access its umem was not registered with";
    CQE_SIZE_UNSUPPORTED = 0x5131_021e, BAD_PARAM, "CQ element size is not supported for DPA-bound CQs";
    BAD_HASH_FN = 0x5131_021f, BAD_PARAM, "rx_hash_fn is not a valid hash function";
    BAD_HEAP_SIZE = 0x5131_0220, BAD_PARAM, "DPA process heap size zero or above the process memory";
    BAD_PORT = 0x5131_0221, BAD_PARAM, "port number names no port of this device (ports are 1-based)";
    BAD_GID_INDEX = 0x5131_0222, BAD_PARAM, "RoCE address (GID) table index past the table (the model fills indexes 0 and 1)";
    GID_NOT_IPV4 = 0x5131_0223, BAD_PARAM, "remote GID is not IPv4-mapped, or the source GID is the link-local one (the model carries RoCE v2 over IPv4 only: source index 1)";
    OTHER_VPORT = 0x5131_0224, BAD_PARAM, "other_vport set: a function may query only its own vport";
    ELF_MALFORMED = 0x5131_0225, BAD_PARAM, "DPA process image is not a well-formed ELF64 executable";
    ELF_NOT_RISCV = 0x5131_0226, BAD_PARAM, "DPA process image is not a little-endian 64-bit RISC-V (EM_RISCV) executable";
    ELF_BAD_SEGMENT = 0x5131_0227, BAD_PARAM, "DPA process image has a loadable segment outside the text window (0x40000000, or 0x10000000 in the older layout; not writable) or the data window (0x80000000, or 0x28000000; not executable), or segments of both layouts";
    ELF_NO_TEXT = 0x5131_0228, BAD_PARAM, "DPA process image has no executable segment";
    PD_MISMATCH = 0x5131_0229, BAD_PARAM, "the QP and its shared receive queue (RMP) are in different PDs";
    DPA_APP_UNSIGNED = 0x5131_022a, BAD_PARAM, "DPA Application Authentication is enabled (the profile trusts a root certificate) and the process image comes without a signature (sig_size 0)";
    DPA_APP_AUTH_FAILED = 0x5131_022b, BAD_PARAM, "DPA Application Authentication: the image's signature does not verify (hash list, RSA_SHA_512 signature, or a certificate chain anchored in a trusted root)";
    BAD_SIG_RANGE = 0x5131_022c, BAD_PARAM, "DPA process signature does not fit its umem, or is over 64 KiB";
    NOT_PARTITION_MANAGER = 0x5131_022d, BAD_PARAM, "only the DPA partition manager (the physical function, standing for the ECPF, or the kernel) writes EU partitions (provisional)";
    BAD_PARTITION_VHCA = 0x5131_022e, BAD_PARAM, "an EU partition names no function, or a vHCA id that is not a function of this device";
    PARTITION_OVERLAP = 0x5131_022f, BAD_PARAM, "an EU partition shares EUs with another partition (partitions are isolated pools)";
    NO_PARTITION = 0x5131_0230, BAD_PARAM, "a function other than the partition manager has no EU partition naming it: it has no EU to run a DPA thread on or group";

    // Capacity.
    TOO_MANY_OBJECTS = 0x5131_0301, NO_RES, "object count limit of the capability reached";
    ABOVE_CAP = 0x5131_0302, LIM_ERR, "value above the device's capability";
    DPA_MEMORY_EXHAUSTED = 0x5131_0303, NO_RES, "DPA process memory exhausted";
    TOO_MANY_THREADS = 0x5131_0304, NO_RES, "DPA thread limit reached";

    // States.
    BAD_SQ_TRANSITION = 0x5131_0401, BAD_RES_STATE, "SQ state transition not allowed (RST->RDY->ERR, any->RST)";
    BAD_RQ_TRANSITION = 0x5131_0402, BAD_RES_STATE, "RQ state transition not allowed";
    BAD_QP_TRANSITION = 0x5131_0403, BAD_QP_STATE, "QP state transition not allowed from its current state";
    CURRENT_STATE_MISMATCH = 0x5131_0404, BAD_RES_STATE, "modify names a current state the object is not in";
    QUEUE_NOT_READY = 0x5131_0405, BAD_RES_STATE, "referenced queue is not in a state that allows this";
    DPA_PROCESS_STATE = 0x5131_0406, BAD_RES_STATE, "DPA process is not in a state that allows this";
    DPA_THREAD_BUSY = 0x5131_0407, BAD_RES_STATE, "DPA thread is running on an EU";
    DPA_THREAD_STATE = 0x5131_0408, BAD_RES_STATE, "DPA thread failed (error state): it cannot run again";
    NO_COREDUMP = 0x5131_0409, BAD_RES_STATE, "DPA process has not failed: there is no coredump";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syndromes_are_unique_and_statuses_are_errors() {
        let mut seen = std::collections::HashSet::new();
        for c in ALL {
            assert!(
                seen.insert(c.syndrome),
                "duplicate syndrome {:#x}",
                c.syndrome
            );
            assert!(!c.status.is_ok(), "{} answers OK", c.what);
            assert_eq!(Check::by_syndrome(c.syndrome), Some(c));
        }
    }
}
