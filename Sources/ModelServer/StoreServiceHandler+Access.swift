import Foundation
import GRPCCore
import ModelCore
import ModelWire

/// GrantAccess and RevokeAccess: who besides its owner may read or write a store.
extension StoreServiceHandler {
    func grantAccess(request: Modeld_V1_GrantAccessRequest, context: ServerContext) async throws
        -> Modeld_V1_StoreInfo
    {
        try await core.rpc.handle("GrantAccess") {
            let store = try core.store(request.store, whileMigrating: true, for: .manage)
            let principal = try Self.principal(request.grant.principal, "grant access to")
            let level: StoreAccessRecord.GrantLevel
            switch request.grant.level {
            case .read: level = .read
            case .write: level = .write
            case .UNRECOGNIZED(let number):
                throw ModelError(
                    .invalidArgument, "access level \(number) is none of READ (0) and WRITE (1)",
                    context: ["store": store.name])
            }
            // A store without an owner becomes the granting caller's, an administrator's: only
            // they may manage such a store (``AccessPolicy/allows(_:_:_:)``, checked above).
            try await core.catalog.changeAccess(of: store.name, ownerIfNone: Caller.current.uid) {
                $0.grant(level, to: principal)
            }
            core.logger.info(
                "store '\(store.name)': \(principal.description) may now \(level == .write ? "read and write" : "read")"
            )
            return try await core.info(store)
        }
    }

    func revokeAccess(request: Modeld_V1_RevokeAccessRequest, context: ServerContext) async throws
        -> Modeld_V1_StoreInfo
    {
        try await core.rpc.handle("RevokeAccess") {
            let store = try core.store(request.store, whileMigrating: true, for: .manage)
            let principal = try Self.principal(request.principal, "revoke access from")
            try await core.catalog.changeAccess(of: store.name, ownerIfNone: nil) { $0.revoke(principal) }
            core.logger.info("store '\(store.name)': \(principal.description)'s access revoked")
            return try await core.info(store)
        }
    }

    /// The user or group a request names (by name, or by number), or INVALID_ARGUMENT asking
    /// for one to `action`.
    static func principal(_ wire: Modeld_V1_AccessPrincipal, _ action: String) throws(ModelError) -> Principal {
        switch wire.kind {
        case .user(let name):
            if let uid = UnixAccounts.user(named: name)?.uid ?? UInt32(name) { return .user(uid) }
            throw ModelError(.invalidArgument, "no user named '\(name)' on the daemon's host", context: ["user": name])
        case .group(let name):
            if let gid = UnixAccounts.group(named: name) ?? UInt32(name) { return .group(gid) }
            throw ModelError(
                .invalidArgument, "no group named '\(name)' on the daemon's host", context: ["group": name])
        case nil:
            throw ModelError(.invalidArgument, "name a user or a group to \(action)")
        }
    }
}

extension Principal {
    /// `user alice`, `group staff` (or their numbers when the host names them not).
    var description: String {
        switch self {
        case .user(let uid): "user \(UnixAccounts.user(uid: uid)?.name ?? String(uid))"
        case .group(let gid): "group \(UnixAccounts.group(gid: gid) ?? String(gid))"
        }
    }

    var wire: Modeld_V1_AccessPrincipal {
        switch self {
        case .user(let uid): .with { $0.user = UnixAccounts.user(uid: uid)?.name ?? String(uid) }
        case .group(let gid): .with { $0.group = UnixAccounts.group(gid: gid) ?? String(gid) }
        }
    }
}
