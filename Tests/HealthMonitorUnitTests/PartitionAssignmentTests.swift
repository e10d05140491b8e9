import Contracts
import Testing

@testable import HealthMonitor

@Suite("Health-monitor's partition assignment: each partition one replica, and little moves when replicas come and go")
struct PartitionAssignmentTests {
    static let replicas = (0..<6).map { "health-monitor-\($0)-\(String($0 &* 0x2545_F491, radix: 16))" }

    static func assignment(_ replicas: [String]) -> [String: Set<EventPartition>] {
        Dictionary(uniqueKeysWithValues: replicas.map { ($0, PartitionAssignment.wanted(by: $0, replicas: replicas)) })
    }

    @Test("with 1 to 6 replicas every partition is wanted by exactly one, and each replica wants some", arguments: 1...6)
    func exactlyOne(count: Int) {
        let wanted = Self.assignment(Array(Self.replicas.prefix(count)))
        for partition in EventPartition.all {
            #expect(wanted.values.filter { $0.contains(partition) }.count == 1, "partition \(partition) with \(count) replicas")
        }
        #expect(wanted.values.reduce(0) { $0 + $1.count } == EventPartition.count)
        #expect(wanted.values.allSatisfy { !$0.isEmpty }, "\(wanted.mapValues(\.count))")
    }

    @Test("a replica that joins takes partitions only from the others, and gives back just those when it leaves")
    func joinAndLeave() {
        for count in 1..<Self.replicas.count {
            let before = Self.assignment(Array(Self.replicas.prefix(count)))
            let after = Self.assignment(Array(Self.replicas.prefix(count + 1)))
            for (replica, partitions) in before {
                #expect(after[replica]!.isSubset(of: partitions), "\(replica) gained partitions when another joined")
            }
            // Whatever moved went to the newcomer.
            let moved = before.reduce(0) { $0 + $1.value.subtracting(after[$1.key]!).count }
            #expect(moved == after[Self.replicas[count]]!.count)
        }
    }

    @Test("the list may hold the replica itself or not, in any order, with repeats: the answer is the same")
    func listShape() {
        let list = Array(Self.replicas.prefix(3))
        let me = list[1]
        let wanted = PartitionAssignment.wanted(by: me, replicas: list)
        #expect(PartitionAssignment.wanted(by: me, replicas: list.reversed() + [me]) == wanted)
        #expect(PartitionAssignment.wanted(by: me, replicas: [list[0], list[2]]) == wanted)
        #expect(PartitionAssignment.wanted(by: me, replicas: []) == Set(EventPartition.all))
    }
}
