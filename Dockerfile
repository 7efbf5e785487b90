# Build a static tabula binary (pure-Go SQLite: no cgo) and ship it alone.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/tabula ./cmd/tabula

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/tabula /tabula
EXPOSE 6443
VOLUME /data
ENTRYPOINT ["/tabula", "serve", "--data-dir", "/data", "--listen", "0.0.0.0:6443"]
