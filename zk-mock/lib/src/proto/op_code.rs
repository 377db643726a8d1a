//! Operation codes (`org.apache.zookeeper.ZooDefs.OpCode`).

/// A request type as it appears in `RequestHeader.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum OpCode {
    Notification = 0,
    Create = 1,
    Delete = 2,
    Exists = 3,
    GetData = 4,
    SetData = 5,
    GetAcl = 6,
    SetAcl = 7,
    GetChildren = 8,
    Sync = 9,
    Ping = 11,
    GetChildren2 = 12,
    Check = 13,
    Multi = 14,
    Create2 = 15,
    Reconfig = 16,
    CheckWatches = 17,
    RemoveWatches = 18,
    CreateContainer = 19,
    DeleteContainer = 20,
    CreateTtl = 21,
    MultiRead = 22,
    Auth = 100,
    SetWatches = 101,
    Sasl = 102,
    GetEphemerals = 103,
    GetAllChildrenNumber = 104,
    SetWatches2 = 105,
    AddWatch = 106,
    WhoAmI = 107,
    CreateSession = -10,
    CloseSession = -11,
    Error = -1,
}

impl OpCode {
    /// Maps a wire value to an op code, `None` for values ZooKeeper does not define.
    pub fn from_i32(v: i32) -> Option<OpCode> {
        use OpCode::*;
        Some(match v {
            0 => Notification,
            1 => Create,
            2 => Delete,
            3 => Exists,
            4 => GetData,
            5 => SetData,
            6 => GetAcl,
            7 => SetAcl,
            8 => GetChildren,
            9 => Sync,
            11 => Ping,
            12 => GetChildren2,
            13 => Check,
            14 => Multi,
            15 => Create2,
            16 => Reconfig,
            17 => CheckWatches,
            18 => RemoveWatches,
            19 => CreateContainer,
            20 => DeleteContainer,
            21 => CreateTtl,
            22 => MultiRead,
            100 => Auth,
            101 => SetWatches,
            102 => Sasl,
            103 => GetEphemerals,
            104 => GetAllChildrenNumber,
            105 => SetWatches2,
            106 => AddWatch,
            107 => WhoAmI,
            -10 => CreateSession,
            -11 => CloseSession,
            -1 => Error,
            _ => return None,
        })
    }

    /// Whether the op is a transaction: it consumes a zxid even when it fails.
    pub fn is_write(self) -> bool {
        use OpCode::*;
        matches!(
            self,
            Create
                | Create2
                | CreateContainer
                | CreateTtl
                | Delete
                | SetData
                | SetAcl
                | Multi
                | Check
                | CreateSession
                | CloseSession
                | DeleteContainer
        )
    }

    /// The op whose [`name`](Self::name) is `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<OpCode> {
        (-20..200)
            .filter_map(OpCode::from_i32)
            .find(|o| o.name().eq_ignore_ascii_case(name))
    }

    /// A short name, as ZooKeeper's `Request.op2String` prints it.
    pub fn name(self) -> &'static str {
        use OpCode::*;
        match self {
            Notification => "notification",
            Create => "create",
            Delete => "delete",
            Exists => "exists",
            GetData => "getData",
            SetData => "setData",
            GetAcl => "getACL",
            SetAcl => "setACL",
            GetChildren => "getChildren",
            Sync => "sync",
            Ping => "ping",
            GetChildren2 => "getChildren2",
            Check => "check",
            Multi => "multi",
            Create2 => "create2",
            Reconfig => "reconfig",
            CheckWatches => "checkWatches",
            RemoveWatches => "removeWatches",
            CreateContainer => "createContainer",
            DeleteContainer => "deleteContainer",
            CreateTtl => "createTTL",
            MultiRead => "multiRead",
            Auth => "auth",
            SetWatches => "setWatches",
            Sasl => "sasl",
            GetEphemerals => "getEphemerals",
            GetAllChildrenNumber => "getAllChildrenNumber",
            SetWatches2 => "setWatches2",
            AddWatch => "addWatch",
            WhoAmI => "whoAmI",
            CreateSession => "createSession",
            CloseSession => "closeSession",
            Error => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_back_to_itself() {
        for v in -20..200 {
            if let Some(op) = OpCode::from_i32(v) {
                assert_eq!(op as i32, v, "{op:?}");
            }
        }
        assert_eq!(OpCode::from_i32(10), None);
        assert_eq!(OpCode::from_i32(23), None);
    }
}
