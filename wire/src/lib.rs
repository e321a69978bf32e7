//! The JSON shapes of seckill-app's HTTP answers, shared by the service
//! (which writes them) and the load generator (which reads them): a field
//! renamed on one side is a compile error on the other, and a field missing
//! from an answer fails decoding loudly instead of reading as 0.
