import ServiceKit
import StreamFanout

@main struct Main: ServiceEntryPoint { typealias Service = StreamFanoutService }
