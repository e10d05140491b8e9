import StreamFanout
import ServiceKit

@main struct Main: ServiceEntryPoint { typealias Service = StreamFanoutService }
