//! TIS, TIR and RQT: where an SQ sends through, where received frames go.

use super::*;

// ---------------------------------------------------------------------------------------------
// TIS, TIR, RQT.

/// CREATE_TIS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateTis {
    pub transport_domain: u32,
    pub pd: Pdn,
}

command! {
    CreateTis: CREATE_TIS, create_tis_in -> create_tis_out => u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        put(
            v,
            op,
            create_tis_in::ctx.at(tisc::transport_domain),
            u64::from(self.transport_domain),
            "transport_domain",
        )?;
        put(
            v,
            op,
            create_tis_in::ctx.at(tisc::pd),
            u64::from(self.pd),
            "pd",
        )
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(create_tis_out::tisn))
    }
}

/// CREATE_TIR delivering to one RQ (`disp_type` direct).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateTir {
    pub transport_domain: u32,
    pub inline_rqn: Rqn,
}

command! {
    CreateTir: CREATE_TIR, create_tir_in -> create_tir_out => u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let c = create_tir_in::ctx;
        // disp_type DIRECT = 0 (PRM `MLX5_TIRC_DISP_TYPE_DIRECT`): the zeroed default.
        put(
            v,
            op,
            c.at(tirc::inline_rqn),
            u64::from(self.inline_rqn),
            "inline_rqn",
        )?;
        put(
            v,
            op,
            c.at(tirc::transport_domain),
            u64::from(self.transport_domain),
            "transport_domain",
        )
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(create_tir_out::tirn))
    }
}

/// CREATE_RQT over a list of RQs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRqt {
    pub rqns: Vec<Rqn>,
}

command! {
    CreateRqt: CREATE_RQT, create_rqt_in -> create_rqt_out => u32;
    fn inbox_extra(&self) -> usize {
        4 * self.rqns.len()
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let n = self.rqns.len() as u64;
        if n == 0 {
            return Err(CmdError::InvalidAttr {
                opcode: op,
                what: "an RQT needs at least one RQ".into(),
            });
        }
        let c = create_rqt_in::rqt_context;
        put(v, op, c.at(rqtc::rqt_max_size), n, "rqt_max_size")?;
        put(v, op, c.at(rqtc::rqt_actual_size), n, "rqt_actual_size")?;
        let list: Vec<u64> = self
            .rqns
            .iter()
            .map(|&r| u64::from(r.0 & 0xff_ffff))
            .collect();
        put_flex(v, op, create_rqt_in::rq_num, &list)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(create_rqt_out::rqtn))
    }
}
