#if canImport(Glibc)
    import Glibc
#endif
import FramedTransport
import Foundation
import ModelCore
import Synchronization

/// What a call needs of a store.
enum AccessNeed: Int, Comparable, Sendable {
    /// Reading objects, history, the schema; opening a session; a backup.
    case read
    /// Saving.
    case write
    /// Dropping, migrating, restoring over, granting, setting retention, deleting history: the
    /// store's owner or an administrator.
    case manage

    static func < (a: AccessNeed, b: AccessNeed) -> Bool { a.rawValue < b.rawValue }

    var verb: String {
        switch self {
        case .read: "read"
        case .write: "write to"
        case .manage: "manage"
        }
    }
}

/// Who a grant is for.
enum Principal: Codable, Hashable, Sendable {
    case user(UInt32)
    case group(UInt32)
}

/// Access to one store: its owner (the user who created it), and what others were granted.
struct StoreAccessRecord: Codable, Equatable, Sendable {
    var owner: UInt32
    var grants: [Grant] = []

    struct Grant: Codable, Equatable, Sendable {
        var principal: Principal
        var level: GrantLevel
    }

    enum GrantLevel: String, Codable, Sendable {
        case read, write

        var allows: AccessNeed { self == .read ? .read : .write }
    }

    /// Grants `level` to `principal`, replacing what it had.
    mutating func grant(_ level: GrantLevel, to principal: Principal) {
        revoke(principal)
        grants.append(Grant(principal: principal, level: level))
    }

    /// Takes back what `principal` was granted; false if it had nothing.
    @discardableResult
    mutating func revoke(_ principal: Principal) -> Bool {
        let before = grants.count
        grants.removeAll { $0.principal == principal }
        return grants.count < before
    }
}

/// The calling user, as the kernel vouches for it, with its name and groups (looked up in the
/// host's accounts at most every ``AccountCache/lifetime``).
struct Caller: Sendable {
    let uid: UInt32
    let gid: UInt32

    init(_ credentials: PeerCredentials) {
        uid = credentials.uid
        gid = credentials.gid
    }

    var name: String? { AccountCache.shared.account(uid: uid, gid: gid).name }
    var groups: Set<UInt32> { AccountCache.shared.account(uid: uid, gid: gid).groups }

    /// The caller of the current call (``PeerCredentials/current``); outside a call (the daemon's
    /// own work), the daemon's user.
    static var current: Caller {
        Caller(PeerCredentials.current ?? PeerCredentials(uid: getuid(), gid: getgid(), pid: getpid()))
    }

    /// `alice (uid 1001)`, or `uid 1001` for a user the host does not name.
    var description: String { name.map { "\($0) (uid \(uid))" } ?? "uid \(uid)" }

    /// What history records of the caller: its name, or `uid N`.
    var historyName: String { name ?? "uid \(uid)" }
}

/// Users' names and groups, as the host's accounts (NSS) give them, kept for a few seconds: a
/// lookup reads /etc/passwd and /etc/group, too dear for every call; a change of groups is seen
/// within ``lifetime``.
final class AccountCache: Sendable {
    static let shared = AccountCache()
    static let lifetime: Duration = .seconds(10)

    struct Account: Sendable {
        let name: String?
        let groups: Set<UInt32>
        let expires: ContinuousClock.Instant
    }

    private let accounts = Mutex<[UInt64: Account]>([:])

    func account(uid: UInt32, gid: UInt32) -> Account {
        let key = UInt64(uid) << 32 | UInt64(gid)
        let now = ContinuousClock.now
        if let cached = accounts.withLock({ $0[key] }), cached.expires > now { return cached }
        let user = UnixAccounts.user(uid: uid)
        var groups: Set<UInt32> = [gid]
        if let user { groups.formUnion(UnixAccounts.groups(of: user.name, primary: user.gid)) }
        let account = Account(name: user?.name, groups: groups, expires: now + Self.lifetime)
        accounts.withLock { accounts in
            if accounts.count > 1_000 { accounts.removeAll() }
            accounts[key] = account
        }
        return account
    }
}

/// The stores' access records, by store name, in `<stores>/access.json`. A store without a
/// record (made before access control, or by the daemon itself: the default store) is open to
/// every caller.
typealias StoreAccessList = StoreSettings<StoreAccessRecord>

extension StoreSettings<StoreAccessRecord> {
    convenience init(file: URL) {
        self.init(
            file: file,
            contents:
                "the stores' access list (without it every store is open to every caller of the socket; restore it from a backup)"
        )
    }

    func record(for store: String) -> StoreAccessRecord? { value(for: store) }

    func set(_ record: StoreAccessRecord?, for store: String) throws { try set(value: record, for: store) }
}

/// Who may do what: root, the daemon's own user and the members of the administrators' group
/// (`--admin-group`) may do anything; a store's owner may do anything to it; others what they
/// were granted (read, or read and write); a store without a record (no owner) is open to every
/// caller to read and write, and only administrators may manage it: dropping the shared default
/// store, or dropping it and making it again as one's own, would take it from everyone.
struct AccessPolicy: Sendable {
    let daemonUID: UInt32
    let administrators: UInt32?

    func isAdministrator(_ caller: Caller) -> Bool {
        caller.uid == 0 || caller.uid == daemonUID || administrators.map(caller.groups.contains) == true
    }

    func allows(_ caller: Caller, _ need: AccessNeed, _ record: StoreAccessRecord?) -> Bool {
        if isAdministrator(caller) { return true }
        guard let record else { return need < .manage }
        guard caller.uid != record.owner else { return true }
        guard need < .manage else { return false }
        let granted = record.grants.compactMap { grant -> AccessNeed? in
            switch grant.principal {
            case .user(let uid): uid == caller.uid ? grant.level.allows : nil
            case .group(let gid): caller.groups.contains(gid) ? grant.level.allows : nil
            }
        }
        return granted.contains { $0 >= need }
    }

    /// PERMISSION_DENIED naming the store, the caller and who can let it in.
    func refusal(_ caller: Caller, _ need: AccessNeed, store: String, record: StoreAccessRecord?) -> ModelError {
        let owner = record.map { UnixAccounts.user(uid: $0.owner)?.name ?? "uid \($0.owner)" } ?? "its owner"
        let advice: String
        switch (need, record) {
        case (.manage, nil):
            advice =
                "it has no owner, so only an administrator may (an administrator's first grant on it makes them its owner)"
        case (.manage, _):
            advice = "only its owner (\(owner)) or an administrator may"
        default:
            advice =
                "its owner (\(owner)) or an administrator can grant it: modelctl store grant \(store) --user \(caller.name ?? String(caller.uid)) --\(need == .read ? "read" : "write")"
        }
        return ModelError(
            .permissionDenied, "user \(caller.description) may not \(need.verb) the store '\(store)'; \(advice)",
            context: ["store": store, "uid": String(caller.uid)])
    }
}

/// The host's users and groups (NSS: /etc/passwd, /etc/group and whatever else it is set up with).
/// Each lookup reads the entry's strings while the buffer they point into is alive.
enum UnixAccounts {
    private static let bufferSize = 16 * 1024

    static func user(uid: UInt32) -> (name: String, gid: UInt32)? {
        withBuffer { buffer in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            guard getpwuid_r(uid, &entry, buffer, bufferSize, &result) == 0, result != nil else {
                return nil
            }
            return (String(cString: entry.pw_name), entry.pw_gid)
        }
    }

    static func user(named name: String) -> (uid: UInt32, gid: UInt32)? {
        withBuffer { buffer in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            guard getpwnam_r(name, &entry, buffer, bufferSize, &result) == 0, result != nil else {
                return nil
            }
            return (entry.pw_uid, entry.pw_gid)
        }
    }

    static func group(named name: String) -> UInt32? {
        withBuffer { buffer in
            var entry = Glibc.group()
            var result: UnsafeMutablePointer<Glibc.group>?
            guard getgrnam_r(name, &entry, buffer, bufferSize, &result) == 0, result != nil else {
                return nil
            }
            return entry.gr_gid
        }
    }

    static func group(gid: UInt32) -> String? {
        withBuffer { buffer in
            var entry = Glibc.group()
            var result: UnsafeMutablePointer<Glibc.group>?
            guard getgrgid_r(gid, &entry, buffer, bufferSize, &result) == 0, result != nil else {
                return nil
            }
            return String(cString: entry.gr_name)
        }
    }

    /// The groups `user` belongs to (its primary one included).
    static func groups(of user: String, primary: UInt32) -> [UInt32] {
        var capacity: Int32 = 64
        while true {
            var count = capacity
            let groups = [gid_t](unsafeUninitializedCapacity: Int(capacity)) { buffer, initialized in
                let found = getgrouplist(user, primary, buffer.baseAddress, &count)
                initialized = found < 0 ? 0 : Int(min(count, capacity))
            }
            if !groups.isEmpty || count <= capacity { return groups.isEmpty ? [primary] : groups }
            capacity = count
        }
    }

    private static func withBuffer<T>(_ body: (UnsafeMutablePointer<CChar>) -> T) -> T {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bufferSize)
        defer { buffer.deallocate() }
        return body(buffer)
    }
}

extension ServerConfiguration {
    /// The number of the host's group `name` (or `name` itself when it is a number).
    public static func groupID(named name: String) -> UInt32? {
        UnixAccounts.group(named: name) ?? UInt32(name)
    }
}
