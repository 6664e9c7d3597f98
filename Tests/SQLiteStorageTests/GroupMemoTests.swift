import ModelStorage
import Testing

/// ``GroupMemo`` keeps a group's sequences by name: each name's own value, the last read or set;
/// only the ones set since the last ``GroupMemo/takeWrites()`` handed back, sorted by name; a copy
/// that later sets do not reach.
@Suite struct GroupMemoTests {
    @Test func eachSequenceKeepsItsOwnValueAndOnlySetOnesAreWritten() {
        let memo = GroupMemo()
        #expect(memo.value(of: "Item") == nil)
        memo.read("Item", 10)
        memo.read("_history", 4)
        memo.read("Tag", 7)
        #expect(memo.value(of: "Item") == 10)
        #expect(memo.value(of: "_history") == 4)
        #expect(memo.takeWrites().isEmpty)

        memo.set("Tag", to: 9)
        memo.set("Item", to: 12)
        memo.set("Note", to: 1)
        #expect(memo.value(of: "Tag") == 9)
        #expect(memo.value(of: "Note") == 1)
        let writes = memo.takeWrites()
        #expect(writes.map(\.name) == ["Item", "Note", "Tag"])
        #expect(writes.map(\.value) == [12, 1, 9])
        // Handed back once: set again, only that one comes back.
        #expect(memo.takeWrites().isEmpty)
        memo.set("Item", to: 13)
        #expect(memo.takeWrites().map(\.name) == ["Item"])
        #expect(memo.value(of: "_history") == 4)
    }

    @Test func aCopyIsNotChangedByWhatTheMemoDoesAfter() {
        let memo = GroupMemo()
        memo.read("Item", 1)
        memo.set("Tag", to: 5)
        let copy = memo.copy()
        memo.set("Item", to: 50)
        memo.set("Other", to: 2)
        #expect(copy.value(of: "Item") == 1)
        #expect(copy.value(of: "Other") == nil)
        #expect(copy.takeWrites().map(\.name) == ["Tag"])
        #expect(memo.takeWrites().map(\.name) == ["Item", "Other", "Tag"])
    }
}
