import HealthMonitor
import ServiceKit

@main struct Main: ServiceEntryPoint { typealias Service = HealthMonitorService }
