import Contracts

/// Which replica should follow which event partition: rendezvous hashing over the replicas that
/// count (each partition goes to the replica whose id scores highest for it). Every replica
/// computes the same answer from the same list, so each partition has one wanted follower; a
/// replica that joins or leaves moves only the partitions it gains or held (about 1/n of them).
/// Pure: the leases (``PartitionLeases``) make sure no partition is followed twice while
/// replicas disagree.
enum PartitionAssignment {
    /// The partitions `replica` should follow when `replicas` count (`replica` among them).
    static func wanted(by replica: String, replicas: some Collection<String>) -> Set<EventPartition> {
        let ids = Set(replicas).union([replica])
        let scored = ids.map { ($0, EventPartition.fnv1a($0.utf8)) }
        var wanted: Set<EventPartition> = []
        for partition in EventPartition.all {
            let key = EventPartition.mixed(UInt64(partition.index) &* 0x9E37_79B9_7F4A_7C15)
            var best: (score: UInt64, id: String)?
            for (id, hash) in scored {
                let score = EventPartition.mixed(hash ^ key)
                if best == nil || (score, id) > (best!.score, best!.id) { best = (score, id) }
            }
            if best?.id == replica { wanted.insert(partition) }
        }
        return wanted
    }
}
