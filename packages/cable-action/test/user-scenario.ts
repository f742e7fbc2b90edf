// The user's own chat scenario, as the action's tests put it in their repository: the local
// target's ChatChannel, a round trip stamped and matched three times, `rtt` the gated latency.
export function chatScenario(phase: { duration: number; arrivalRate: number }, comment = ""): string {
  return `${comment ? `# ${comment}\n` : ""}config:
  target: ws://localhost:3000/cable
  engines:
    cable: {}
  phases:
    - duration: ${phase.duration}
      arrivalRate: ${phase.arrivalRate}
scenarios:
  - name: chat
    engine: cable
    flow:
      - connect:
          cookies: { uid: "user/{{ $uuid }}" }
      - subscribe: { channel: ChatChannel, params: { id: demo }, as: chat }
      - loop:
          - perform: { channel: chat, action: speak, data: { message: "hi {{ $uuid }}" }, stamp: true }
          - receive: { channel: chat, match: { message: "hi {{ $uuid }}" }, metric: rtt }
        count: 3
`;
}
