import CSQLite
import Foundation
import ModelCore

extension SQLiteStatement {
    /// Column `index` read back as a value of `type` (the inverse of ``bind(_:at:)``); NULL is
    /// ``Value/null``. A stored value that cannot be read as `type` (a foreign tool wrote it) is
    /// `storageFailure`.
    func value(_ index: Int32, as type: AttributeType) throws(ModelError) -> Value {
        let storage = storageClass(index)
        if storage == SQLITE_NULL { return .null }
        switch type {
        case .string: return .string(text(index))
        case .json: return .json(text(index))
        case .int:
            // An int sum that overflowed comes back as a double, as arithmetic does.
            return storage == SQLITE_FLOAT ? .double(double(index)) : .int(int64(index))
        case .double: return .double(double(index))
        case .bool: return .bool(int64(index) != 0)
        case .date: return .date(Timestamp(microsecondsSince1970: int64(index)))
        case .data: return .data(data(index))
        case .uuid:
            let text = text(index)
            guard let uuid = UUID(text: text) else { throw unreadable(text, as: type, index) }
            return .uuid(uuid)
        case .url:
            let text = text(index)
            guard let url = URL(string: text) else { throw unreadable(text, as: type, index) }
            return .url(url)
        case .decimal:
            let text = text(index)
            guard let decimal = DecimalText.parse(text) else { throw unreadable(text, as: type, index) }
            return .decimal(decimal)
        }
    }

    private func unreadable(_ text: String, as type: AttributeType, _ index: Int32) -> ModelError {
        let column = sqlite3_column_name(handle, index).map { String(cString: $0) } ?? "\(index)"
        return ModelError(.storageFailure, "the stored value '\(text.prefix(80))' of column \(column) is not a valid \(type.rawValue)",
                          context: ["column": column, "sql": String(sql.prefix(2000))])
    }
}
