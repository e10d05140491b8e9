import Notifier
import ServiceKit

@main struct Main: ServiceEntryPoint { typealias Service = NotifierService }
