extension RandomAccessCollection where Index == Int {
    /// The index of the first element from `start` on, wrapping around to the front, that
    /// satisfies `predicate`; nil if none does. For names that usually come in the order last
    /// seen (a map's keys, a run's columns): looking from after the last one found finds the
    /// next at once, without hashing it.
    @inlinable
    public func firstIndex(wrappingFrom start: Int, where predicate: (Element) throws -> Bool) rethrows -> Int? {
        for offset in 0..<count {
            var index = start + offset
            if index >= endIndex { index -= count }
            if try predicate(self[index]) { return index }
        }
        return nil
    }
}
