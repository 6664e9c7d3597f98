import Foundation
import ManualPages

/// modeld(8), from its command definition.
enum DaemonManual {
    static func render(date: Date) -> String {
        ManualPage.render(
            root: Modeld.self, section: 8, date: date,
            sections: [
                (
                    "FILES",
                    """
                    .TP
                    .I /run/modeld/modeld.sock
                    The socket, as root or under systemd (modeld.socket).
                    .TP
                    .I /var/lib/modeld/stores/<name>.sqlite
                    The stores, as root or under systemd (StateDirectory=modeld).
                    .TP
                    .I $XDG_RUNTIME_DIR/modeld/modeld.sock, $XDG_DATA_HOME/modeld
                    The socket and data directory of a user's daemon (without those variables:
                    /tmp/modeld-<uid>/modeld.sock and ~/.local/share/modeld).
                    """
                ),
                (
                    "SYSTEMD",
                    """
                    Under systemd modeld takes its listening sockets from socket activation \
                    (LISTEN_FDS: the gRPC socket, and the framed one at its path plus .frames when passed), reports READY=1, STATUS= and STOPPING=1 on NOTIFY_SOCKET, pings the \
                    watchdog at half of WATCHDOG_USEC, and logs with syslog priority prefixes when \
                    standard error is the journal.
                    """
                ),
                ("SEE ALSO", ".BR modelctl (1),\n.BR systemd.socket (5)"),
            ])
    }
}
