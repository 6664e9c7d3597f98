import Testing

/// The suites that load the machine on purpose to show that one client cannot hurt the others
/// (stalled streams, stalled watches, watch churn) run one after another. Beside each other on
/// two cores, each one's time limits would measure the others' load rather than the daemon's.
@Suite(.serialized) enum OneAtATime {}
