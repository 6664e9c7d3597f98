import NIOCore
import NIOPosix

/// Runs tasks on the event loop of the thread that enqueues them: a gRPC handler whose stream's
/// channel (on an event loop of the shared group) starts it begins on that loop's thread,
/// without waking another; a task resumed from a thread that is no event loop's (a storage
/// queue's, say) goes to one of the group's loops. What a handler does between awaits runs on a
/// loop, so that loop's other connections wait for it: modeld's handlers hand storage work to
/// queues of their own.
final class LoopLocalExecutor: TaskExecutor {
    static let shared = LoopLocalExecutor(group: .singleton)

    private let group: MultiThreadedEventLoopGroup

    init(group: MultiThreadedEventLoopGroup) {
        self.group = group
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let loop = MultiThreadedEventLoopGroup.currentEventLoop ?? group.next()
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
