package stockonline

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	pb "github.com/tierbench/tierbench/internal/workloads/stockonline/stockonlinepb"
)

// The session bean across a process boundary, as in the paper's
// deployment: serveBroker answers the Broker service of stockonlinepb with
// the beans of one business tier, remoteBean is a facade that calls it.
// Each facade call is one remote call whatever the protocol; results and
// business exceptions come back as the bean returned them (the same
// sentinel errors), so the client cannot tell.

// serveBroker registers on s the Broker service answered by beans (one per
// server thread), on threads of them: each call on its own thread's bean,
// the others waiting, as the driver's admission does in one process.
func serveBroker(s grpc.ServiceRegistrar, beans []facade, threads int) {
	pb.RegisterBrokerServer(s, &brokerBean{beans: beans, threads: remote.NewThreads(threads), stmts: make([][]holding, len(beans))})
}

type brokerBean struct {
	pb.UnimplementedBrokerServer
	beans   []facade
	threads *remote.Threads
	// stmts are the threads' statement buffers: a thread serves one call
	// at a time.
	stmts [][]holding
}

// businessReasons name the business exceptions of section 3.3 on the wire.
var businessReasons = []struct {
	err    error
	reason pb.BusinessException_Reason
}{
	{ErrUnknownAccount, pb.BusinessException_UNKNOWN_ACCOUNT},
	{ErrUnknownStock, pb.BusinessException_UNKNOWN_STOCK},
	{ErrInsufficientCredit, pb.BusinessException_INSUFFICIENT_CREDIT},
	{ErrNoHolding, pb.BusinessException_NO_HOLDING},
	{ErrInsufficientHolding, pb.BusinessException_INSUFFICIENT_HOLDING},
}

// errorStatus is the status a bean's error crosses the layer as: a
// business exception as FailedPrecondition naming it; anything else as
// remote.FailureStatus, which names its class and tells the caller the
// bean answered.
func errorStatus(err error) error {
	for _, b := range businessReasons {
		if errors.Is(err, b.err) {
			st, derr := status.New(codes.FailedPrecondition, err.Error()).WithDetails(&pb.BusinessException{Reason: b.reason})
			if derr != nil {
				return status.Errorf(codes.Internal, "%v (its detail could not be sent: %v)", err, derr)
			}
			return st.Err()
		}
	}
	return remote.FailureStatus(err)
}

// take lends the caller a free thread's bean, waiting for one while all
// are busy or until the caller gives up; give it back with Give.
func (b *brokerBean) take(ctx context.Context) (facade, int, error) {
	th, err := b.threads.Take(ctx)
	if err != nil {
		return nil, 0, err
	}
	return b.beans[th], th, nil
}

func (b *brokerBean) CreateAccount(ctx context.Context, r *pb.CreateAccountRequest) (*pb.CreateAccountReply, error) {
	bean, th, err := b.take(ctx)
	if err != nil {
		return nil, err
	}
	defer b.threads.Give(th)
	id, err := bean.createAccount(ctx, r.GetName(), r.GetAddress(), r.GetCredit())
	if err != nil {
		return nil, errorStatus(err)
	}
	return &pb.CreateAccountReply{Account: id}, nil
}

func (b *brokerBean) UpdateAccount(ctx context.Context, r *pb.UpdateAccountRequest) (*pb.UpdateAccountReply, error) {
	bean, th, err := b.take(ctx)
	if err != nil {
		return nil, err
	}
	defer b.threads.Give(th)
	if err := bean.updateAccount(ctx, r.GetAccount(), r.GetCredit()); err != nil {
		return nil, errorStatus(err)
	}
	return &pb.UpdateAccountReply{}, nil
}

func (b *brokerBean) QueryById(ctx context.Context, r *pb.QueryByIdRequest) (*pb.Quote, error) {
	bean, th, err := b.take(ctx)
	if err != nil {
		return nil, err
	}
	defer b.threads.Give(th)
	q, err := bean.queryByID(ctx, r.GetStock())
	if err != nil {
		return nil, errorStatus(err)
	}
	return &pb.Quote{Current: q.current, High: q.high, Low: q.low}, nil
}

func (b *brokerBean) QueryByCode(ctx context.Context, r *pb.QueryByCodeRequest) (*pb.Quote, error) {
	bean, th, err := b.take(ctx)
	if err != nil {
		return nil, err
	}
	defer b.threads.Give(th)
	q, err := bean.queryByCode(ctx, r.GetCode())
	if err != nil {
		return nil, errorStatus(err)
	}
	return &pb.Quote{Current: q.current, High: q.high, Low: q.low}, nil
}

func (b *brokerBean) BuyStock(ctx context.Context, r *pb.Trade) (*pb.BuyStockReply, error) {
	bean, th, err := b.take(ctx)
	if err != nil {
		return nil, err
	}
	defer b.threads.Give(th)
	if err := bean.buy(ctx, trade{account: r.GetAccount(), stock: r.GetStock(), amount: r.GetAmount()}); err != nil {
		return nil, errorStatus(err)
	}
	return &pb.BuyStockReply{}, nil
}

func (b *brokerBean) SellStock(ctx context.Context, r *pb.Trade) (*pb.SellStockReply, error) {
	bean, th, err := b.take(ctx)
	if err != nil {
		return nil, err
	}
	defer b.threads.Give(th)
	if err := bean.sell(ctx, trade{account: r.GetAccount(), stock: r.GetStock(), amount: r.GetAmount()}); err != nil {
		return nil, errorStatus(err)
	}
	return &pb.SellStockReply{}, nil
}

func (b *brokerBean) GetHoldingStatement(ctx context.Context, r *pb.GetHoldingStatementRequest) (*pb.HoldingStatement, error) {
	bean, th, err := b.take(ctx)
	if err != nil {
		return nil, err
	}
	defer b.threads.Give(th)
	hs, err := bean.holdingStatement(ctx, r.GetAccount(), b.stmts[th][:0])
	b.stmts[th] = hs
	if err != nil {
		return nil, errorStatus(err)
	}
	// The reply is encoded after the thread is given back: nothing in it
	// may be the thread's.
	out := &pb.HoldingStatement{Holdings: make([]*pb.Holding, len(hs))}
	rows := make([]pb.Holding, len(hs))
	for i, h := range hs {
		rows[i].Stock, rows[i].Amount = h.stock, h.amount
		out.Holdings[i] = &rows[i]
	}
	return out, nil
}

// remoteBean is the session bean behind conn, a connection to a tier that
// serveBroker answers. It belongs to one client, whose calls are one at a
// time, so its requests and replies are reused call after call: a call
// allocates only what the layer does (and a statement's rows, which
// decoding makes afresh). A business exception comes back as the same
// sentinel error; the bean's other failures wrap the store's class as in
// process (the driver retries an abort); a write that failed in the layer
// wraps store.ErrInDoubt. Every error but a business exception wraps the
// layer's status (status.Code reads it) and names the operation.
type remoteBean struct {
	conn grpc.ClientConnInterface

	createReq pb.CreateAccountRequest
	created   pb.CreateAccountReply
	updateReq pb.UpdateAccountRequest
	updated   pb.UpdateAccountReply
	byIDReq   pb.QueryByIdRequest
	byCodeReq pb.QueryByCodeRequest
	quote     pb.Quote
	trade     pb.Trade
	bought    pb.BuyStockReply
	sold      pb.SellStockReply
	stmtReq   pb.GetHoldingStatementRequest
	stmtReply pb.HoldingStatement
}

var _ facade = (*remoteBean)(nil)

func newRemoteBean(conn grpc.ClientConnInterface) *remoteBean { return &remoteBean{conn: conn} }

// staticMethod is what the generated client passes with every call (the
// method is one of the service's, for the layer's metrics), as a slice
// made once.
var staticMethod = []grpc.CallOption{grpc.StaticMethod()}

func (f *remoteBean) invoke(ctx context.Context, op int, method string, req, reply any) error {
	if err := f.conn.Invoke(ctx, method, req, reply, staticMethod...); err != nil {
		return remoteError(op, err)
	}
	return nil
}

// writes are the operations that change the database.
var writes = [numOps]bool{CreateAccount: true, UpdateAccount: true, BuyStock: true, SellStock: true}

// remoteError turns the status of a failed call back into what the bean
// returned, as far as the caller acts on it.
func remoteError(op int, err error) error {
	if st, ok := status.FromError(err); ok {
		for _, d := range st.Details() {
			if be, ok := d.(*pb.BusinessException); ok {
				for _, b := range businessReasons {
					if b.reason == be.GetReason() {
						return b.err
					}
				}
			}
		}
	}
	wrapped := fmt.Errorf("remote %s: %w", opNames[op], err)
	// A write whose call failed in the layer (the tier not reached, the
	// reply lost, the caller's deadline) may have committed.
	if _, answered := remote.FailureClass(err); !answered && writes[op] {
		return store.Classified(store.ErrInDoubt, wrapped)
	}
	return remote.FailureError(wrapped)
}

func (f *remoteBean) createAccount(ctx context.Context, name, address string, credit int64) (int64, error) {
	f.createReq.Name, f.createReq.Address, f.createReq.Credit = name, address, credit
	if err := f.invoke(ctx, CreateAccount, pb.Broker_CreateAccount_FullMethodName, &f.createReq, &f.created); err != nil {
		return 0, err
	}
	return f.created.GetAccount(), nil
}

func (f *remoteBean) updateAccount(ctx context.Context, account, credit int64) error {
	f.updateReq.Account, f.updateReq.Credit = account, credit
	return f.invoke(ctx, UpdateAccount, pb.Broker_UpdateAccount_FullMethodName, &f.updateReq, &f.updated)
}

func (f *remoteBean) queryByID(ctx context.Context, stock int64) (quote, error) {
	f.byIDReq.Stock = stock
	if err := f.invoke(ctx, QueryByID, pb.Broker_QueryById_FullMethodName, &f.byIDReq, &f.quote); err != nil {
		return quote{}, err
	}
	return quote{current: f.quote.GetCurrent(), high: f.quote.GetHigh(), low: f.quote.GetLow()}, nil
}

func (f *remoteBean) queryByCode(ctx context.Context, code string) (quote, error) {
	f.byCodeReq.Code = code
	if err := f.invoke(ctx, QueryByCode, pb.Broker_QueryByCode_FullMethodName, &f.byCodeReq, &f.quote); err != nil {
		return quote{}, err
	}
	return quote{current: f.quote.GetCurrent(), high: f.quote.GetHigh(), low: f.quote.GetLow()}, nil
}

func (f *remoteBean) buy(ctx context.Context, t trade) error {
	f.trade.Account, f.trade.Stock, f.trade.Amount = t.account, t.stock, t.amount
	return f.invoke(ctx, BuyStock, pb.Broker_BuyStock_FullMethodName, &f.trade, &f.bought)
}

func (f *remoteBean) sell(ctx context.Context, t trade) error {
	f.trade.Account, f.trade.Stock, f.trade.Amount = t.account, t.stock, t.amount
	return f.invoke(ctx, SellStock, pb.Broker_SellStock_FullMethodName, &f.trade, &f.sold)
}

func (f *remoteBean) holdingStatement(ctx context.Context, account int64, buf []holding) ([]holding, error) {
	f.stmtReq.Account = account
	if err := f.invoke(ctx, GetHoldingStatement, pb.Broker_GetHoldingStatement_FullMethodName, &f.stmtReq, &f.stmtReply); err != nil {
		return buf, err
	}
	for _, h := range f.stmtReply.GetHoldings() {
		buf = append(buf, holding{stock: h.GetStock(), amount: h.GetAmount()})
	}
	return buf, nil
}
