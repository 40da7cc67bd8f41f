export type TracerStats = {
  connections: number;
  openConnections: number;
  httpEvents: number;
  tcpEvents: number;
  /** Database calls recorded, per protocol, and the connections they came over. */
  postgresqlCalls: number;
  mysqlCalls: number;
  redisCalls: number;
  dbConnections: number;
  /** Messages database connections carried without an event each (pub/sub, MONITOR, notifications). */
  dbUnrecorded: number;
  /** WebSocket messages recorded, and those the per-connection budget left out (counted when a connection ends). */
  webSocketMessages: number;
  webSocketDropped: number;
  /** Connections the parser gave up on (recorded as tcp). */
  parserGaveUp: number;
  /** Exceptions caught inside a tap: the connection became passthrough. */
  tapErrors: number;
  droppedEvents: number;
  bytesFromClients: number;
  bytesFromServers: number;
};

export function emptyTracerStats(): TracerStats {
  return {
    connections: 0,
    openConnections: 0,
    httpEvents: 0,
    tcpEvents: 0,
    postgresqlCalls: 0,
    mysqlCalls: 0,
    redisCalls: 0,
    dbConnections: 0,
    dbUnrecorded: 0,
    webSocketMessages: 0,
    webSocketDropped: 0,
    parserGaveUp: 0,
    tapErrors: 0,
    droppedEvents: 0,
    bytesFromClients: 0,
    bytesFromServers: 0,
  };
}
