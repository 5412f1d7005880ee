//! General objects (create / modify / query / destroy by object type) and the DPA's
//! object attributes, aliases and coredumps.

use super::*;

// ---------------------------------------------------------------------------------------------
// General objects.

/// A general object context: its type number and how its attributes encode.
pub trait GeneralObject {
    /// `obj_type` in `general_obj_in_cmd_hdr`.
    const OBJ_TYPE: u16;
    /// The object context layout that follows the header.
    type Ctx: Layout;
    /// Writes the context (zeroed, `Ctx::SIZE_BYTES` long).
    ///
    /// # Errors
    /// [`CmdError::InvalidAttr`] for attributes that do not fit.
    fn encode_ctx(&self, ctx: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError>;
}

/// CREATE_GENERAL_OBJECT of `O`: yields the object id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateGeneralObject<O>(pub O);

impl<O: GeneralObject> Command for CreateGeneralObject<O> {
    const OPCODE: Opcode = Opcode::CREATE_GENERAL_OBJECT;
    type In = general_obj_in_cmd_hdr::Layout;
    type Out = general_obj_out_cmd_hdr::Layout;
    type Output = u32;
    fn inbox_extra(&self) -> usize {
        O::Ctx::SIZE_BYTES
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        // In general_obj_in_cmd_hdr, op_mod's place holds obj_type (PRM).
        v.set(general_obj_in_cmd_hdr::obj_type, u64::from(O::OBJ_TYPE));
        encode_ctx_after_hdr(v, &self.0)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(general_obj_out_cmd_hdr::obj_id))
    }
}

fn encode_ctx_after_hdr<O: GeneralObject>(
    v: &mut ViewMut<'_, general_obj_in_cmd_hdr::Layout>,
    obj: &O,
) -> Result<(), CmdError> {
    let op = Opcode::CREATE_GENERAL_OBJECT;
    let hdr_len = general_obj_in_cmd_hdr::Layout::SIZE_BYTES;
    // The view is over the whole inbox; re-borrow its tail for the context.
    let tail = v.bytes_mut().get_mut(hdr_len..).unwrap_or_default();
    let mut ctx =
        ViewMut::<O::Ctx>::new(tail).map_err(|source| CmdError::Layout { opcode: op, source })?;
    obj.encode_ctx(&mut ctx)
}

/// MODIFY_GENERAL_OBJECT of `O` (the context's `modify_field_select` says what changes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifyGeneralObject<O> {
    pub obj_id: u32,
    pub obj: O,
}

impl<O: GeneralObject> Command for ModifyGeneralObject<O> {
    const OPCODE: Opcode = Opcode::MODIFY_GENERAL_OBJECT;
    type In = general_obj_in_cmd_hdr::Layout;
    type Out = general_obj_out_cmd_hdr::Layout;
    type Output = ();
    fn inbox_extra(&self) -> usize {
        O::Ctx::SIZE_BYTES
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(general_obj_in_cmd_hdr::obj_type, u64::from(O::OBJ_TYPE));
        v.set(general_obj_in_cmd_hdr::obj_id, u64::from(self.obj_id));
        encode_ctx_after_hdr(v, &self.obj)
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

/// QUERY_GENERAL_OBJECT: yields the object context bytes (`ctx_len` bytes after the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryGeneralObject {
    pub obj_type: u16,
    pub obj_id: u32,
    pub ctx_len: usize,
}

command! {
    QueryGeneralObject: QUERY_GENERAL_OBJECT, general_obj_in_cmd_hdr -> general_obj_out_cmd_hdr => Vec<u8>;
    fn outbox_extra(&self) -> usize {
        self.ctx_len
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(general_obj_in_cmd_hdr::obj_type, u64::from(self.obj_type));
        v.set(general_obj_in_cmd_hdr::obj_id, u64::from(self.obj_id));
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        Ok(flex_bytes(&v))
    }
}

/// DESTROY_GENERAL_OBJECT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestroyGeneralObject {
    pub obj_type: u16,
    pub obj_id: u32,
}

command! {
    DestroyGeneralObject: DESTROY_GENERAL_OBJECT, general_obj_in_cmd_hdr -> general_obj_out_cmd_hdr;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(general_obj_in_cmd_hdr::obj_type, u64::from(self.obj_type));
        v.set(general_obj_in_cmd_hdr::obj_id, u64::from(self.obj_id));
        Ok(())
    }
}

/// An alias of another function's object (`alias_object` = 1, `alias_context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateAlias {
    pub obj_type: u16,
    pub vhca_id: u16,
    pub object_id: u32,
    pub access_key: [u8; 32],
}

command! {
    CreateAlias: CREATE_GENERAL_OBJECT, create_alias_in -> general_obj_out_cmd_hdr => u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let h = create_alias_in::hdr;
        let c = create_alias_in::alias_ctx;
        v.set(
            h.at(general_obj_in_cmd_hdr::obj_type),
            u64::from(self.obj_type),
        );
        v.set(h.at(general_obj_in_cmd_hdr::alias_object), 1);
        v.set(
            c.at(alias_context::vhca_id_to_be_accessed),
            u64::from(self.vhca_id),
        );
        v.set(
            c.at(alias_context::object_id_to_be_accessed),
            u64::from(self.object_id),
        );
        v.set_bytes(c.at(alias_context::access_key), &self.access_key)
            .map_err(|source| CmdError::Layout {
                opcode: Self::OPCODE,
                source,
            })
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(general_obj_out_cmd_hdr::obj_id))
    }
}

// DPA general objects (provisional contexts, see layouts::dpa).

/// DPA_MEM attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaMemAttr {
    pub dpa_process_id: u32,
    pub size: u64,
}

impl GeneralObject for DpaMemAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_MEM;
    type Ctx = dpa_mem::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        c.set(dpa_mem::dpa_process_id, u64::from(self.dpa_process_id));
        c.set(dpa_mem::size, self.size);
        Ok(())
    }
}

/// DPA_PROCESS attributes: the ELF image in a UMEM, PD and heap size, and the application's
/// signature (crypto data) in a UMEM when it has one (`sig_size` 0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaProcessAttr {
    pub pd: Pdn,
    pub elf_umem_id: u32,
    pub elf_umem_offset: u64,
    pub elf_size: u64,
    pub heap_size: u64,
    pub sig_umem_id: u32,
    pub sig_umem_offset: u64,
    pub sig_size: u64,
}

impl GeneralObject for DpaProcessAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_PROCESS;
    type Ctx = dpa_process::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_process::pd,
            u64::from(self.pd),
            "pd",
        )?;
        c.set(dpa_process::elf_umem_id, u64::from(self.elf_umem_id));
        c.set(dpa_process::elf_umem_offset, self.elf_umem_offset);
        c.set(dpa_process::elf_size, self.elf_size);
        c.set(dpa_process::heap_size, self.heap_size);
        c.set(dpa_process::sig_umem_id, u64::from(self.sig_umem_id));
        c.set(dpa_process::sig_umem_offset, self.sig_umem_offset);
        c.set(dpa_process::sig_size, self.sig_size);
        Ok(())
    }
}

/// Where a DPA thread may run (FlexIO `flexio_affinity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DpaAffinity {
    #[default]
    None,
    /// One EU.
    Strict(u16),
    /// An EU group.
    Group(u16),
}

/// DPA_THREAD attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaThreadAttr {
    pub dpa_process_id: u32,
    pub entry_point: u64,
    pub user_arg: u64,
    pub thread_local_storage_daddr: u64,
    pub affinity: DpaAffinity,
    pub default_outbox_id: u32,
    pub default_window_id: u32,
    pub continuable: bool,
}

impl GeneralObject for DpaThreadAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_THREAD;
    type Ctx = dpa_thread::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        let (ty, id) = match self.affinity {
            DpaAffinity::None => (0, 0),
            DpaAffinity::Strict(eu) => (1, eu),
            DpaAffinity::Group(g) => (2, g),
        };
        c.set(dpa_thread::affinity_type, ty);
        c.set(dpa_thread::affinity_id, u64::from(id));
        c.set(dpa_thread::dpa_process_id, u64::from(self.dpa_process_id));
        c.set(dpa_thread::entry_point, self.entry_point);
        c.set(dpa_thread::user_arg, self.user_arg);
        c.set(
            dpa_thread::thread_local_storage_daddr,
            self.thread_local_storage_daddr,
        );
        c.set(
            dpa_thread::default_outbox_id,
            u64::from(self.default_outbox_id),
        );
        c.set(
            dpa_thread::default_window_id,
            u64::from(self.default_window_id),
        );
        c.set(dpa_thread::continuable, u64::from(self.continuable));
        Ok(())
    }
}

/// DPA_OUTBOX attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaOutboxAttr {
    pub dpa_process_id: u32,
    pub uar: u32,
}

impl GeneralObject for DpaOutboxAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_OUTBOX;
    type Ctx = dpa_outbox::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        c.set(dpa_outbox::dpa_process_id, u64::from(self.dpa_process_id));
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_outbox::uar,
            u64::from(self.uar),
            "uar",
        )
    }
}

/// DPA_WINDOW attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaWindowAttr {
    pub dpa_process_id: u32,
    pub pd: Pdn,
}

impl GeneralObject for DpaWindowAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_WINDOW;
    type Ctx = dpa_window::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        c.set(dpa_window::dpa_process_id, u64::from(self.dpa_process_id));
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_window::pd,
            u64::from(self.pd),
            "pd",
        )
    }
}

/// DPA_EQ attributes (public layout, see `layouts::dpa::dpa_eq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaEqAttr {
    pub log_umem_size: u8,
    pub uar_page: u32,
    pub umem_id: u32,
    pub umem_offset: u64,
    pub oi: bool,
}

impl GeneralObject for DpaEqAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_EQ;
    type Ctx = dpa_eq::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        let op = Opcode::CREATE_GENERAL_OBJECT;
        put(
            c,
            op,
            dpa_eq::log_umem_size,
            u64::from(self.log_umem_size),
            "log_umem_size",
        )?;
        put(
            c,
            op,
            dpa_eq::uar_page,
            u64::from(self.uar_page),
            "uar_page",
        )?;
        c.set(dpa_eq::oi, u64::from(self.oi));
        c.set(dpa_eq::umem_id, u64::from(self.umem_id));
        c.set(dpa_eq::umem_offset, self.umem_offset);
        Ok(())
    }
}

/// DB_CQ_MAPPING attributes (public layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbCqMappingAttr {
    pub device_emulation_id: u32,
    pub queue_id: u32,
    pub cqn: u32,
    pub queue_type: u8,
    pub device_type: u8,
}

impl GeneralObject for DbCqMappingAttr {
    const OBJ_TYPE: u16 = obj_type::DB_CQ_MAPPING;
    type Ctx = dpa_db_cq_mapping::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_db_cq_mapping::queue_type,
            u64::from(self.queue_type),
            "queue_type",
        )?;
        c.set(dpa_db_cq_mapping::device_type, u64::from(self.device_type));
        c.set(
            dpa_db_cq_mapping::device_emulation_id,
            u64::from(self.device_emulation_id),
        );
        c.set(dpa_db_cq_mapping::queue_id, u64::from(self.queue_id));
        c.set(dpa_db_cq_mapping::cqn, u64::from(self.cqn));
        Ok(())
    }
}

/// MODIFY of a DPA_THREAD (provisional context, see `layouts::dpa::dpa_thread`): a new
/// `user_arg` and / or a new `state`. Writing `state` = RUNNING runs the thread once (FlexIO
/// `flexio_event_handler_run`, `flexio_process_call`); IDLE makes it wait for events again;
/// FINISHED makes it ignore events. Use with [`ModifyGeneralObject`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DpaThreadModify {
    pub user_arg: Option<u64>,
    pub state: Option<u8>,
}

impl GeneralObject for DpaThreadModify {
    const OBJ_TYPE: u16 = obj_type::DPA_THREAD;
    type Ctx = dpa_thread::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        let mut select = 0;
        if let Some(arg) = self.user_arg {
            select |= dpa_thread_modify::USER_ARG;
            c.set(dpa_thread::user_arg, arg);
        }
        if let Some(state) = self.state {
            select |= dpa_thread_modify::STATE;
            put(
                c,
                Opcode::MODIFY_GENERAL_OBJECT,
                dpa_thread::state,
                u64::from(state),
                "state",
            )?;
        }
        c.set(dpa_thread::modify_field_select, select);
        Ok(())
    }
}

/// DPA_PROCESS_COREDUMP (0xb2b, provisional layout `layouts::dpa::dpa_process_coredump_in`):
/// yields the coredump image of a failed process (decode it with `crate::dpa::coredump`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaProcessCoredump {
    pub dpa_process_id: u32,
}

command! {
    DpaProcessCoredump: DPA_PROCESS_COREDUMP, dpa_process_coredump_in -> dpa_process_coredump_out => Vec<u8>;
    fn outbox_extra(&self) -> usize {
        DPA_COREDUMP_MAX_BYTES
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(
            dpa_process_coredump_in::dpa_process_id,
            u64::from(self.dpa_process_id),
        );
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        let len = v.get(dpa_process_coredump_out::dump_size) as usize;
        let image = flex_bytes(&v);
        if len > image.len() {
            return Err(CmdError::Layout {
                opcode: Self::OPCODE,
                source: LayoutError::TooShort {
                    layout: "dpa_process_coredump_out",
                    need: dpa_process_coredump_out::Layout::SIZE_BYTES + len,
                    got: v.bytes().len(),
                },
            });
        }
        Ok(image[..len].to_vec())
    }
}

/// DPA_UAR attributes (provisional context `layouts::dpa::dpa_uar`): extends host UAR page
/// `uar_page` to a process (FlexIO `flexio_uar_extend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaUarAttr {
    pub dpa_process_id: u32,
    pub uar_page: u32,
}

impl GeneralObject for DpaUarAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_UAR;
    type Ctx = dpa_uar::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        c.set(dpa_uar::dpa_process_id, u64::from(self.dpa_process_id));
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_uar::uar_page,
            u64::from(self.uar_page),
            "uar_page",
        )
    }
}
