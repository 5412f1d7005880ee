//! Golden byte vectors for command inboxes, derived by hand from the public layouts.
//!
//! Each expectation lists the non-zero bytes of the inbox as (byte offset, value); every other
//! byte must be zero. The offsets are worked out from the mlx5_ifc bit offsets in the comments
//! (byte = bit / 8; a field ending on bit b of a dword sits in the byte holding bit b).

use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::Status;
use mlx5_dpa::mlx5::{Cqn, Pdn, Qpn, Rqn, Sqn};

fn check(inbox: &[u8], len: usize, nonzero: &[(usize, u8)]) {
    assert_eq!(inbox.len(), len, "inbox length");
    let mut want = vec![0u8; len];
    for &(i, v) in nonzero {
        want[i] = v;
    }
    for (i, (g, w)) in inbox.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "byte {i:#x}: got {g:#04x}, want {w:#04x}");
    }
}

#[test]
fn alloc_pd() {
    // opcode 0x800 at bits 0x0..0x10.
    check(&encode_inbox(&AllocPd).unwrap(), 16, &[(0, 0x08)]);
}

#[test]
fn alloc_transport_domain() {
    check(
        &encode_inbox(&AllocTransportDomain).unwrap(),
        16,
        &[(0, 0x08), (1, 0x16)],
    );
}

#[test]
fn nop() {
    check(&encode_inbox(&Nop).unwrap(), 16, &[(0, 0x08), (1, 0x0d)]);
}

#[test]
fn query_hca_cap_dpa_page() {
    // op_mod = (0x24 << 1) | 1 = 0x49 at bits 0x30..0x40 -> byte 7.
    let q = QueryHcaCap {
        cap_type: QueryHcaCap::DPA,
        current: true,
    };
    check(&encode_inbox(&q).unwrap(), 16, &[(0, 0x01), (7, 0x49)]);
}

#[test]
fn destroy_cq() {
    // cqn at bits 0x48..0x60 -> bytes 9..12.
    check(
        &encode_inbox(&DestroyCq(Cqn(0x12_3456))).unwrap(),
        16,
        &[(0, 0x04), (1, 0x01), (9, 0x12), (10, 0x34), (11, 0x56)],
    );
}

#[test]
fn create_cq_bound_to_a_dpa_thread() {
    let c = CreateCq {
        log_cq_size: 6,
        cqe_sz: 0,
        uar_page: 0x42,
        target: CqEventTarget::DpaThread(0x77),
        mem: RingMem {
            umem_id: 0x11,
            umem_offset: 0x1000,
            dbr_umem_id: 0x22,
            dbr_offset: 0x40,
        },
        cq_period: 0,
        cq_max_count: 0,
        oi: false,
        cc: false,
        cqe_comp: false,
    };
    // cq_context at 0x80 (byte 16). Inside cqc: dbr_umem_valid bit 6 and apu_cq bit 7 of dword 0
    // -> byte 16 = 0b0000_0011; apu_element_type 0x19/3 = THREAD 0; dbr_umem_id 0x20/32 ->
    // bytes 20..24; log_cq_size 0x63/5 -> byte 28; uar_page 0x68/24 -> bytes 29..32;
    // c_eqn_or_apu_element 0xa0/32 -> bytes 36..40; dbr_addr 0x1c0/64 -> bytes 72..80.
    // Then cq_umem_offset 0x280/64 -> bytes 80..88, cq_umem_id 0x2c0 -> 88..92,
    // cq_umem_valid 0x2e0 -> byte 92 bit 7.
    check(
        &encode_inbox(&c).unwrap(),
        0x110,
        &[
            (0, 0x04),
            (16, 0x03),
            (23, 0x22),
            (28, 6),
            (31, 0x42),
            (39, 0x77),
            (79, 0x40),
            (86, 0x10),
            (91, 0x11),
            (92, 0x80),
        ],
    );
}

#[test]
fn modify_sq_rst_to_rdy() {
    // sq_state 0x40/4 = RST (0); sqn 0x48/24; sq_context at 0x100, sqc.state 0x8/4 -> bit 0x108
    // -> byte 33 high nibble = 1.
    let m = ModifySq {
        sqn: Sqn(0xab),
        from: WqState::Rst,
        to: WqState::Rdy,
    };
    check(
        &encode_inbox(&m).unwrap(),
        0x110,
        &[(0, 0x09), (1, 0x05), (11, 0xab), (33, 0x10)],
    );
}

#[test]
fn create_tis() {
    // ctx at 0x100; tisc.transport_domain 0x128/24 -> bit 0x228 -> bytes 69..72;
    // tisc.pd 0x168/24 -> bit 0x268 -> bytes 77..80.
    let t = CreateTis {
        transport_domain: 0x01_0203,
        pd: Pdn(0x04_0506),
    };
    check(
        &encode_inbox(&t).unwrap(),
        0xc0,
        &[
            (0, 0x09),
            (1, 0x12),
            (69, 0x01),
            (70, 0x02),
            (71, 0x03),
            (77, 0x04),
            (78, 0x05),
            (79, 0x06),
        ],
    );
}

#[test]
fn create_tir_direct() {
    // ctx at 0x100; tirc.inline_rqn 0xe8/24 -> bit 0x1e8 -> bytes 61..64;
    // tirc.transport_domain 0x128/24 -> bit 0x228 -> bytes 69..72.
    let t = CreateTir {
        transport_domain: 7,
        inline_rqn: Rqn(0x99),
    };
    check(
        &encode_inbox(&t).unwrap(),
        0x110,
        &[(0, 0x09), (63, 0x99), (71, 7)],
    );
}

#[test]
fn rst2init_qp() {
    // qpn 0x48/24 -> bytes 9..12; qpc at 0xc0 (byte 24): pm_state 0x13/2 = 3 -> bits 0xd3..0xd5
    // -> byte 26 bits 4..3 = 0x18; rre/rwe/rae at 0x490..0x493 -> bit 0x550 -> byte 170 high bits
    // 0b111 << 5 = 0xe0; ads.vhca_port_num 0x128/8 inside primary_address_path (0xc0 in qpc)
    // -> bit 0xc0 + 0xc0 + 0x128 = 0x2a8 -> byte 85.
    let m = ModifyQp {
        qpn: Qpn(0x33),
        attr: QpAttr {
            rre: true,
            rwe: true,
            rae: true,
            vhca_port_num: 1,
            ..QpAttr::default()
        },
        transition: Rst2Init,
    };
    check(
        &encode_inbox(&m).unwrap(),
        0x110,
        &[
            (0, 0x05),
            (1, 0x02),
            (11, 0x33),
            (26, 0x18),
            (85, 1),
            (170, 0xe0),
        ],
    );
}

#[test]
fn access_register_user_read_eug() {
    // op_mod 1 (read); register_id 0x50/16 -> bytes 10..12; argument 0x60/32 -> bytes 12..16;
    // register_data from byte 16.
    let a = AccessRegisterUser {
        register_id: 0xc012,
        argument: 0,
        write: false,
        data: vec![0xde, 0xad, 0xbe, 0xef],
    };
    check(
        &encode_inbox(&a).unwrap(),
        20,
        &[
            (0, 0x0b),
            (1, 0x0c),
            (7, 1),
            (10, 0xc0),
            (11, 0x12),
            (16, 0xde),
            (17, 0xad),
            (18, 0xbe),
            (19, 0xef),
        ],
    );
}

#[test]
fn create_dpa_eq_general_object() {
    // general_obj_in_cmd_hdr: opcode 0xa00, obj_type 0x30/16 = 0x33 -> byte 7.
    // dpa_eq context from byte 16: log_umem_size 0x9a/6 -> bits 0x9a..0xa0 -> byte 16+19 low 6;
    // oi 0x8e -> byte 16+17 bit 1; uar_page 0xc8/24 -> bytes 16+25..16+28;
    // umem_id 0xe0/32 -> bytes 16+28..16+32; umem_offset 0x100/64 -> bytes 16+32..16+40.
    let e = CreateGeneralObject(DpaEqAttr {
        log_umem_size: 4,
        uar_page: 0x5,
        umem_id: 0x6,
        umem_offset: 0x700,
        oi: true,
    });
    check(
        &encode_inbox(&e).unwrap(),
        16 + 64,
        &[
            (0, 0x0a),
            (7, 0x33),
            (33, 0x02),
            (35, 4),
            (43, 5),
            (47, 6),
            (54, 0x07),
        ],
    );
}

#[test]
fn set_fte_forwards_to_a_tir() {
    // A destination entry follows the fixed part (0x1a00 bits = 0x340 bytes): type TIR (2) in
    // the top byte, tirn in the next three bytes.
    let f = SetFte {
        table_id: 1,
        flow_index: 0,
        group_id: 2,
        value: OuterMatch {
            udp_dport: Some(4791),
            ..Default::default()
        },
        tirn: 0xabcdef,
        flow_counter: None,
    };
    let b = encode_inbox(&f).unwrap();
    assert_eq!(b.len(), 0x340 + 8);
    assert_eq!(&b[0x340..0x348], &[2, 0xab, 0xcd, 0xef, 0, 0, 0, 0]);
    // flow_context at 0x200 (byte 64): group_id 0x20/32 -> bytes 68..72; action 0x70/16 ->
    // bytes 78..80 = FWD_DEST (4); destination_list_size 0x88/24 -> bytes 81..84 = 1.
    assert_eq!(&b[68..72], &[0, 0, 0, 2]);
    assert_eq!(&b[78..80], &[0, 4]);
    assert_eq!(&b[81..84], &[0, 0, 1]);
    // match_value at 0x200 inside flow_context -> byte 64 + 64 = 128; outer_headers first;
    // udp_dport 0xf0/16 -> bytes 128+30..128+32 = 4791 = 0x12b7.
    assert_eq!(&b[158..160], &[0x12, 0xb7]);
}

#[test]
fn firmware_error_is_named_with_status_and_syndrome() {
    let mut out = [0u8; 16];
    out[0] = 0x03;
    out[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    let e = decode_outbox(&AllocPd, &out).unwrap_err();
    assert_eq!(e.status(), Some(Status::BAD_PARAM));
    assert_eq!(
        e.to_string(),
        "ALLOC_PD (0x800) (op_mod 0x0) failed: status BAD_PARAM (0x3), syndrome 0x12345678"
    );
    let mut ok = [0u8; 16];
    ok[9..12].copy_from_slice(&[0, 0, 0x2a]);
    assert_eq!(decode_outbox(&AllocPd, &ok).unwrap(), Pdn(0x2a));
    assert!(matches!(
        decode_outbox(&AllocPd, &ok[..4]),
        Err(CmdError::NoStatus { .. })
    ));
}

#[test]
fn attributes_that_do_not_fit_are_refused() {
    let c = CreateCq {
        log_cq_size: 40,
        cqe_sz: 0,
        uar_page: 0,
        target: CqEventTarget::Eq(0),
        mem: RingMem {
            umem_id: 0,
            umem_offset: 0,
            dbr_umem_id: 0,
            dbr_offset: 0,
        },
        cq_period: 0,
        cq_max_count: 0,
        oi: false,
        cc: false,
        cqe_comp: false,
    };
    assert!(matches!(
        encode_inbox(&c),
        Err(CmdError::InvalidAttr { .. })
    ));
    assert!(matches!(
        encode_inbox(&DestroyCq(Cqn(1 << 24))),
        Err(CmdError::InvalidAttr { .. })
    ));
    assert!(matches!(
        encode_inbox(&CreateRqt { rqns: vec![] }),
        Err(CmdError::InvalidAttr { .. })
    ));
}
