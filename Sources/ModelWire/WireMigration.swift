import ModelCore

extension MigrationPlan {
    /// Reads a migration plan; a step of a kind this side does not know is an error naming it.
    public init(wire: Modeld_V1_MigrationPlan) throws(ModelError) {
        var steps: [Step] = []
        for step in wire.steps {
            guard let kind = Step.Kind(rawValue: step.kind) else {
                throw ModelError(.invalidArgument, "unknown migration step kind '\(step.kind)'")
            }
            steps.append(
                Step(
                    kind: kind, entity: step.entity, detail: step.detail, objects: Int(step.objects),
                    losesData: step.losesData))
        }
        self.init(fromVersion: wire.fromVersion, toVersion: wire.toVersion, steps: steps, refusals: wire.refusals)
    }

    /// The wire form; `applied` says whether the store changed.
    public func wire(applied: Bool) -> Modeld_V1_MigrationPlan {
        Modeld_V1_MigrationPlan.with {
            $0.fromVersion = fromVersion
            $0.toVersion = toVersion
            $0.steps = steps.map { step in
                Modeld_V1_MigrationStep.with {
                    $0.kind = step.kind.rawValue
                    $0.entity = step.entity
                    $0.detail = step.detail
                    $0.objects = Int64(step.objects)
                    $0.losesData = step.losesData
                }
            }
            $0.refusals = refusals
            $0.applied = applied
        }
    }
}
