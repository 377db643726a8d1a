//! Operation codes (`org.apache.zookeeper.ZooDefs.OpCode`).

/// A request type as it appears in `RequestHeader.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
#[non_exhaustive]
pub enum OpCode {
    /// `notification` (0): no request carries it; ZooKeeper reserves it for watch events.
    Notification = 0,
    /// `create` (1): create a node; the reply carries its path.
    Create = 1,
    /// `delete` (2): delete a node, optionally at an expected version.
    Delete = 2,
    /// `exists` (3): a node's Stat, optionally leaving a watch.
    Exists = 3,
    /// `getData` (4): a node's data and Stat, optionally leaving a watch.
    GetData = 4,
    /// `setData` (5): replace a node's data, optionally at an expected version.
    SetData = 5,
    /// `getACL` (6): a node's ACL and Stat.
    GetAcl = 6,
    /// `setACL` (7): replace a node's ACL, optionally at an expected ACL version.
    SetAcl = 7,
    /// `getChildren` (8): a node's child names, optionally leaving a watch.
    GetChildren = 8,
    /// `sync` (9): a barrier; its reply follows every earlier write.
    Sync = 9,
    /// `ping` (11): a heartbeat that keeps the session alive (xid −2).
    Ping = 11,
    /// `getChildren2` (12): `getChildren` with the node's Stat.
    GetChildren2 = 12,
    /// `check` (13): a version check; a multi op, and a transaction on its own.
    Check = 13,
    /// `multi` (14): write ops applied all or none in one transaction.
    Multi = 14,
    /// `create2` (15): `create` whose reply also carries the new node's Stat.
    Create2 = 15,
    /// `reconfig` (16): change an ensemble's membership.
    Reconfig = 16,
    /// `checkWatches` (17): whether the session has a watch of a type on a path.
    CheckWatches = 17,
    /// `removeWatches` (18): remove the session's watches of a type on a path.
    RemoveWatches = 18,
    /// `createContainer` (19): create a container node (Stat in the reply).
    CreateContainer = 19,
    /// `deleteContainer` (20): the server's own deletion of an empty container; not a client op.
    DeleteContainer = 20,
    /// `createTTL` (21): create a node with a time to live (Stat in the reply).
    CreateTtl = 21,
    /// `multiRead` (22): read ops answered together, each on its own.
    MultiRead = 22,
    /// `auth` (100): add an authentication id to the session (xid −4).
    Auth = 100,
    /// `setWatches` (101): re-register data, exist and child watches after a reconnect.
    SetWatches = 101,
    /// `sasl` (102): a SASL token exchange.
    Sasl = 102,
    /// `getEphemerals` (103): the session's ephemeral nodes under a path prefix.
    GetEphemerals = 103,
    /// `getAllChildrenNumber` (104): the number of descendants of a node.
    GetAllChildrenNumber = 104,
    /// `setWatches2` (105): `setWatches` plus persistent and persistent recursive watches.
    SetWatches2 = 105,
    /// `addWatch` (106): add a persistent or persistent recursive watch.
    AddWatch = 106,
    /// `whoAmI` (107): the session's authentication ids.
    WhoAmI = 107,
    /// `createSession` (−10): the transaction that starts a session; not a client request.
    CreateSession = -10,
    /// `closeSession` (−11): end the session, deleting its ephemeral nodes.
    CloseSession = -11,
    /// `error` (−1): the type of a failed op's result in a multi reply.
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
